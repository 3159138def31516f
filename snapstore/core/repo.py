"""The record layer: a store's LMDB tables as typed records, beside its workspace.

Every operation module (capture, history, scan, the rewind planner and its
journal, gc, fsck) reads and writes the store through this module and nothing
else; none of them sees a table name or a raw LMDB transaction. Reads and
writes take the transaction as their receiver::

    with repo.read() as v:
        turn = v.turn(turn_id)
    repo.write(lambda tx: tx.put_change(change))

A :class:`View` reads one consistent snapshot; a :class:`Tx` is a view that
also writes, inside one durable commit. ``Repo.write`` takes the store's write
lock for its one commit. An operation whose commits must not interleave with
another writer's holds the lock as a value, and passes it to what needs it::

    with repo.lock() as w:
        plan = ...  # read, knowing no other writer commits meanwhile
        w.write(lambda tx: tx.put_turn(turn))

A commit's function may run more than once (when the map grows), so it must
only touch the transaction. The keys and encodings are specified in
docs/format.md.

This module imports only what lies below it: the database, blobs, records and
the workspace's safe file I/O.
"""

from __future__ import annotations

import json
import os
import struct
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from . import blobs
from .db import INITIAL_MAP_SIZE, SCHEMA_VERSION, Database, Writer, keep_out_of_git
from .errors import BadInput, StoreCorrupt, StoreLocked, UnknownSession, UnknownTurn
from .fsio import Workspace
from .places import STORE_DIRNAME
from .records import (
    OPEN,
    Big,
    Change,
    Entry,
    GitMove,
    Session,
    Turn,
    Version,
    dumps,
    index_version,
    loads,
    unscanned_fingerprint,
)

T = TypeVar("T")
_SEQ = struct.Struct(">I")
_EVENT = struct.Struct(">Q")
#: Longest session name, in bytes (an LMDB key holds 511).
MAX_NAME = 255
#: Record kinds whose raw entries fsck walks (and repair may drop).
RECORDS: dict[str, type] = {"turns": Turn, "sessions": Session, "changes": Change}
#: ``git`` keys: a move of a turn (``m`` turn id ``/`` sequence), the last value recorded of
#: a ref, HEAD, the index or the stash's reflog (``r`` name).
_MOVE, _VALUE = b"m", b"r"
#: A ``gitrefs`` value: the blob's size, then its git object id in hex.
_REF_SIZE = struct.Struct(">Q")


def session_key(name: str) -> bytes:
    """A session name as a database key; a name that cannot be one is bad input."""
    try:
        key = name.encode()
    except UnicodeEncodeError:
        raise BadInput(f"session name {name!r} is not valid UTF-8", session=name) from None
    if not key or len(key) > MAX_NAME or b"\0" in key:
        raise BadInput(
            f"session name {name[:40]!r} must be 1 to {MAX_NAME} bytes, without NUL", session=name
        )
    return key


def change_key(turn_id: str, seq: int) -> bytes:
    """The ``changes`` key: turn id, ``/``, 4-byte big-endian sequence."""
    return turn_id.encode() + b"/" + _SEQ.pack(seq)


def _move_key(turn_id: str, seq: int) -> bytes:
    return _MOVE + change_key(turn_id, seq)


def _parse_ref(key: bytes, value: bytes) -> tuple[str, int]:
    oid = value[_REF_SIZE.size :].decode("ascii", "replace")
    if len(oid) not in (40, 64) or any(c not in "0123456789abcdef" for c in oid):
        raise StoreCorrupt(f"git reference {key.hex()[:12]} is malformed")
    return oid, _REF_SIZE.unpack_from(value)[0]


def _prefixed(cursor: Any, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
    """The entries of a cursor's database whose key starts with ``prefix``, in key order."""
    if cursor.set_range(prefix):
        for key, value in cursor:
            if not key.startswith(prefix):
                break
            yield key, value


class View:
    """Typed reads over one consistent snapshot of the store."""

    __slots__ = ("_dbs", "_txn", "clock")

    def __init__(self, txn: Any, dbs: dict[str, Any], clock: Callable[[], float]):
        self._txn, self._dbs, self.clock = txn, dbs, clock

    def _get(self, db: str, key: bytes) -> bytes | None:
        return self._txn.get(key, db=self._dbs[db])

    def _items(self, db: str) -> Iterator[tuple[bytes, bytes]]:
        return iter(self._txn.cursor(db=self._dbs[db]))

    def _meta_json(self, key: bytes) -> Any:
        raw = self._get("meta", key)
        return None if raw is None else json.loads(raw)

    # -- turns and sessions ------------------------------------------------------

    def find_turn(self, turn_id: str) -> Turn | None:
        raw = self._get("turns", turn_id.encode())
        return None if raw is None else loads(Turn, raw)

    def turn(self, turn_id: str) -> Turn:
        """The turn with this exact id."""
        turn = self.find_turn(turn_id)
        if turn is None:
            raise UnknownTurn(f"unknown turn {turn_id}", ref=turn_id)
        return turn

    def turns(self) -> Iterator[Turn]:
        """Every turn, in id order."""
        for _, raw in self._items("turns"):
            yield loads(Turn, raw)

    def session(self, name: str) -> Session | None:
        raw = self._get("sessions", session_key(name))
        return None if raw is None else loads(Session, raw)

    def require_session(self, name: str) -> Session:
        session = self.session(name)
        if session is None:
            raise UnknownSession(f"unknown session {name!r}", session=name)
        return session

    def sessions(self) -> Iterator[Session]:
        for _, raw in self._items("sessions"):
            yield loads(Session, raw)

    def session_count(self) -> int:
        return int(self._txn.stat(self._dbs["sessions"])["entries"])

    def head(self, session: str) -> str | None:
        """The last turn of the session's current branch (None at its start)."""
        raw = self._get("heads", session_key(session))
        return None if raw is None else bytes(raw).decode()

    def heads(self) -> Iterator[tuple[str, str]]:
        """Every session's head, as (session, turn id)."""
        for key, raw in self._items("heads"):
            yield bytes(key).decode(errors="replace"), bytes(raw).decode(errors="replace")

    def open_turn(self, session: str) -> Turn | None:
        """The session's open turn, if it has one."""
        record = self.session(session)
        if record is None or record.open_turn is None:
            return None
        turn = self.turn(record.open_turn)
        return turn if turn.state == OPEN else None

    # -- changes -----------------------------------------------------------------

    def changes(self, turn_id: str) -> list[Change]:
        """The changes of one turn, in the order they were recorded."""
        cursor = self._txn.cursor(db=self._dbs["changes"])
        return [loads(Change, raw) for _, raw in _prefixed(cursor, turn_id.encode() + b"/")]

    def change(self, turn_id: str, seq: int) -> Change:
        raw = self._get("changes", change_key(turn_id, seq))
        if raw is None:
            raise StoreCorrupt(f"turn {turn_id} lists change {seq}, which is missing", turn=turn_id)
        return loads(Change, raw)

    def all_changes(self) -> Iterator[Change]:
        """Every change of every turn, grouped by turn."""
        for _, raw in self._items("changes"):
            yield loads(Change, raw)

    # -- the repository's state (docs/format.md, git) --------------------------------

    def git_moves(self, turn_id: str) -> list[GitMove]:
        """What one turn moved in the repository, in the order it was recorded."""
        cursor = self._txn.cursor(db=self._dbs["git"])
        prefix = _MOVE + turn_id.encode() + b"/"
        return [loads(GitMove, raw) for _, raw in _prefixed(cursor, prefix)]

    def all_git_moves(self) -> Iterator[GitMove]:
        cursor = self._txn.cursor(db=self._dbs["git"])
        for _, raw in _prefixed(cursor, _MOVE):
            yield loads(GitMove, raw)

    def git_value(self, name: str) -> str | None:
        """The last recorded value of ``name`` (None: absent, or never recorded)."""
        raw = self._get("git", _VALUE + name.encode())
        return None if raw is None else bytes(raw).decode()

    def git_values(self) -> dict[str, str]:
        """Every recorded value: the repository as the last record saw it."""
        cursor = self._txn.cursor(db=self._dbs["git"])
        return {
            bytes(key[1:]).decode(): bytes(raw).decode() for key, raw in _prefixed(cursor, _VALUE)
        }

    def git_state(self) -> dict[str, Any] | None:
        """The last record's stamp: the repository's layout and the fingerprints it read."""
        return self._meta_json(b"git")

    def records(self, kind: str) -> Iterator[tuple[bytes, Any]]:
        """Raw entries of ``turns``, ``sessions`` or ``changes``, each decoded or, when it
        cannot be, the :class:`StoreCorrupt` saying why (for fsck)."""
        cls = RECORDS[kind]
        for key, raw in self._items(kind):
            try:
                yield bytes(key), loads(cls, raw)
            except StoreCorrupt as exc:
                yield bytes(key), exc

    # -- blobs -------------------------------------------------------------------

    def has_blob(self, key: bytes) -> bool:
        """Whether the blob is stored; its value is not read (a big file's chunks are
        looked up by the thousand, and reading each would copy it)."""
        return bool(self._txn.cursor(db=self._dbs["blobs"]).set_key(key))

    def blob_values(self) -> Iterator[tuple[bytes, bytes]]:
        """Every stored blob value (header and payload), by key."""
        for key, value in self._items("blobs"):
            yield bytes(key), value

    def blob_value(self, key: bytes) -> bytes | None:
        return self._get("blobs", key)

    def blob_usage(self) -> tuple[int, int]:
        """How many blobs are stored, and the bytes of their values: one pass of the
        cursor in C, no header read (outside git the baseline is a blob per file)."""
        cursor = self._txn.cursor(db=self._dbs["blobs"])
        total = sum(map(len, cursor.iternext(keys=False, values=True)))
        return int(self._txn.stat(self._dbs["blobs"])["entries"]), total

    def blob_size(self, key: bytes) -> int:
        """The size of the bytes blob ``key`` holds, from its header (0: not stored)."""
        value = self._get("blobs", key)
        return 0 if value is None else blobs.parse_header(value, key).size

    def git_ref(self, key: bytes) -> tuple[str, int] | None:
        """The git object id and size a reference key stands for (None: ``key`` names no
        reference: a blob's digest, or nothing)."""
        value = self._get("gitrefs", key)
        return None if value is None else _parse_ref(key, bytes(value))

    def has_git_refs(self) -> bool:
        """Whether any version is known by reference (one cursor step: a scan asks it)."""
        return bool(self._txn.cursor(db=self._dbs["gitrefs"]).first())

    def git_refs(self) -> Iterator[tuple[bytes, tuple[str, int] | StoreCorrupt]]:
        """Every reference, or why its value cannot be read."""
        for key, value in self._items("gitrefs"):
            try:
                yield bytes(key), _parse_ref(bytes(key), bytes(value))
            except StoreCorrupt as exc:
                yield bytes(key), exc

    def blob(self, key: bytes, chunked: bool = True, size: int | None = None) -> bytes:
        """The verified bytes of a blob, following its delta chain.

        Every level of the chain decodes to its recorded size and hashes to its
        key, and each delta records its base's depth plus one; anything else is
        :class:`StoreCorrupt`. A chunked blob is joined from :meth:`pieces` (what
        may meet a big file streams it instead), unless ``chunked`` is false: then
        it is refused, as a chunk or a delta base that is chunked always is. With
        ``size`` (a chunk's, from its list), a blob stating another size is refused
        before anything is decoded.
        """
        chain: list[tuple[bytes, bytes, blobs.BlobHeader]] = []
        current: bytes | None = key
        while current is not None:
            value = self._get("blobs", current)
            if value is None:
                what = "blob" if current == key else f"delta base {current.hex()[:12]} of blob"
                raise StoreCorrupt(f"{what} {key.hex()[:12]} is missing from the store")
            header = blobs.parse_header(value, current)
            if current == key and size is not None and header.size != size:
                raise StoreCorrupt(f"blob {key.hex()[:12]} states {header.size} bytes, not {size}")
            if header.encoding == blobs.CHUNKED and current == key and chunked:
                return b"".join(self.pieces(key))
            if chain and chain[-1][2].depth != header.depth + 1:
                raise StoreCorrupt(f"blob {chain[-1][0].hex()[:12]} records a wrong delta depth")
            chain.append((current, value, header))
            if len(chain) > blobs.MAX_CHAIN + 1:
                raise StoreCorrupt(f"blob {key.hex()[:12]} has a delta chain that is too long")
            current = header.base
        data: bytes | None = None
        for blob_key, value, header in reversed(chain):
            data = blobs.decode_payload(value, header, blob_key, data)
        assert data is not None
        return data

    def chunks(self, key: bytes, value: bytes | None = None) -> list[tuple[bytes, int]] | None:
        """A chunked blob's (digest, size) list; None for a blob stored whole. ``value``
        is the blob's value when it is not stored yet (a pull checks it first)."""
        value = self._get("blobs", key) if value is None else value
        if value is None:
            raise StoreCorrupt(f"blob {key.hex()[:12]} is missing from the store")
        header = blobs.parse_header(value, key)
        return None if header.encoding != blobs.CHUNKED else blobs.chunk_refs(value, header, key)

    def pieces(self, key: bytes, value: bytes | None = None) -> Iterator[bytes]:
        """A blob's bytes in verified pieces: each chunk of a chunked blob (or the whole of
        another), checked against its digest, and the whole checked against ``key`` before
        the last piece is given. Memory holds one chunk at a time. ``value``: a chunked
        blob's value that is not stored yet (a pull checks it against the stored chunks)."""
        refs = self.chunks(key, value)
        if refs is None:
            yield self.blob(key)
            return
        whole = blobs.hasher()
        for n, (chunk, size) in enumerate(refs):
            try:  # read once; a chunked chunk, or one stating another size, is refused
                data = self.blob(chunk, chunked=False, size=size)
            except StoreCorrupt as exc:
                raise StoreCorrupt(
                    f"chunk {chunk.hex()[:12]} of blob {key.hex()[:12]} is damaged: {exc}"
                ) from None
            whole.update(data)
            if n == len(refs) - 1 and whole.digest() != key:
                raise StoreCorrupt(f"blob {key.hex()[:12]} does not match its digest")
            yield data

    def content(self, version: Version | None) -> Entry | None:
        """A recorded version as workspace content (None: the path is absent); a chunked
        blob as :class:`~snapstore.core.records.Big`, to be streamed by :meth:`pieces`."""
        if version is None:
            return None
        value = self._get("blobs", version.key)
        if value is not None and value[0] == blobs.CHUNKED:
            size = blobs.parse_header(value, version.key).size
            return Entry(version.kind, Big(version.key, size), version.mode)
        return Entry(version.kind, self.blob(version.key), version.mode)

    def encode(self, data: bytes, base_key: bytes | None) -> tuple[bytes, bytes | None]:
        """The digest of ``data`` and its encoded value (None when already stored)."""
        key = blobs.digest(data)
        if self.has_blob(key):
            return key, None
        return key, self.encode_against(data, key, base_key)

    def encode_against(self, data: bytes, key: bytes, base_key: bytes | None) -> bytes:
        """Encode ``data`` as a delta against ``base_key`` when that base is usable."""
        if base_key is not None and base_key != key:
            raw = self._get("blobs", base_key)
            if raw is not None:
                header = blobs.parse_header(raw, base_key)
                if header.depth < blobs.MAX_CHAIN and header.size <= blobs.MAX_DELTA_BASE:
                    try:
                        base = self.blob(base_key)
                    except StoreCorrupt:
                        pass  # never delta against a bad base; store a full frame
                    else:
                        return blobs.encode(data, base, base_key, header.depth)
        return blobs.encode(data)

    # -- paths, the scan index, settings -----------------------------------------

    def path_digest(self, rel: str) -> bytes | None:
        """The latest digest recorded for ``rel`` (the delta base for its next version)."""
        return self._get("paths", os.fsencode(rel))

    def path_version(self, rel: str, like: Version | None = None) -> Version | None:
        """The latest version recorded for ``rel``; None when there is none.

        ``paths`` keeps only the digest. The kind and mode are those of the scan
        index when it describes the same digest, else those of ``like``.
        """
        digest = self.path_digest(rel)
        if digest is None:
            return None
        indexed = self.index_entry(os.fsencode(rel))
        if indexed is not None and indexed.endswith(digest):
            return index_version(bytes(indexed))
        if like is None:
            return Version(bytes(digest).hex())
        return Version(bytes(digest).hex(), like.mode, like.kind)

    def path_digests(self) -> Iterator[tuple[str, bytes]]:
        for key, digest in self._items("paths"):
            yield os.fsdecode(bytes(key)), bytes(digest)

    def index_entry(self, rel: bytes) -> bytes | None:
        """A path's scan-index value: stat fingerprint, then digest (docs/format.md)."""
        return self._get("index", rel)

    def index_entries(self, scopes: list[str] | None = None) -> dict[bytes, bytes]:
        """Index entries: all of them, or those at or below each scope."""
        if scopes is None:
            return dict(self._items("index"))
        found: dict[bytes, bytes] = {}
        cursor = self._txn.cursor(db=self._dbs["index"])
        for scope in scopes:
            key = os.fsencode(scope)
            value = self.index_entry(key)
            if value is not None:
                found[key] = value
            found.update(_prefixed(cursor, key + b"/"))
        return found

    def index_values(self) -> Iterator[bytes]:
        for _, value in self._items("index"):
            yield bytes(value)

    def indexed_below(self, folder: str) -> bool:
        """Whether any index entry lies below ``folder``."""
        cursor = self._txn.cursor(db=self._dbs["index"])
        return next(_prefixed(cursor, os.fsencode(folder) + b"/"), None) is not None

    def line_counts(self, key: bytes) -> tuple[int, int, bool] | None:
        """Lines added and removed between two versions, if counted before (``counts``)."""
        raw = self._get("counts", key)
        if raw is None:
            return None
        added, removed, binary = json.loads(raw)
        return int(added), int(removed), bool(binary)

    def counted(self) -> Iterator[bytes]:
        """The keys of every kept line count."""
        for key, _ in self._items("counts"):
            yield bytes(key)

    def scan_state(self) -> dict[str, Any] | None:
        """What the last full scan recorded (baseline time, ignore-rule stamp)."""
        return self._meta_json(b"scan")

    def shell_windows(self) -> dict[str, list[tuple[str, float]]]:
        """Scan mode: each session's shell tool calls in progress: (call id, opened at)."""
        return {
            session: [(call, float(opened)) for call, opened in calls]
            for session, calls in (self._meta_json(b"shell") or {}).items()
        }

    def store_id(self) -> str:
        """The store's random id, fixed at creation (it names this store on remotes)."""
        return bytes(self._get("meta", b"store_id") or b"").decode()

    def unfinished(self) -> list[str]:
        """Rewinds and undos journaled but not finished (docs/format.md, durability)."""
        return list(self._meta_json(b"unfinished") or [])

    def events(self) -> list[dict[str, Any]]:
        """The whole audit log, oldest first."""
        return [json.loads(raw) for _, raw in self._items("events")]


class Tx(View):
    """A view that also writes, inside one durable commit."""

    __slots__ = ()

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
        key = _VALUE + name.encode()
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
        self._put("gitrefs", key, _REF_SIZE.pack(size) + oid.encode())

    def delete_git_ref(self, key: bytes) -> None:
        self._delete("gitrefs", key)

    # -- paths, the scan index, settings -----------------------------------------

    def set_path_digest(self, rel: str, version: Version | None) -> None:
        """Record the latest version of ``rel``; a scan re-reads a path recorded otherwise."""
        key = os.fsencode(rel)
        if version is None:
            self._delete("paths", key)
            return
        self._put("paths", key, version.key)
        if self._get("index", key) is not None:  # scan mode: re-read it
            self._put("index", key, unscanned_fingerprint(version) + version.key)

    def forget_path(self, rel: str) -> None:
        self._delete("paths", os.fsencode(rel))

    def put_index(self, rel: str, value: bytes) -> None:
        self._put("index", os.fsencode(rel), value)

    def delete_index(self, rel: str) -> None:
        self._delete("index", os.fsencode(rel))

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
        return self._writer.write(lambda txn: fn(self.repo._tx(txn)))

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
        """Bring a store of schema 1 to 5 to the current schema in one commit
        (docs/format.md, Versions): schema 3 only added optional fields, schema 4 a blob
        encoding, schema 5 optional fields (a conversation edit's, an inside rewind's)
        and the ``git`` database, schema 6 the ``gitrefs`` database (both created empty
        when the store was opened), so a store of schema 2 or later needs nothing but its
        version. A store of schema 4 or older also gets its ``.gitignore``."""

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
