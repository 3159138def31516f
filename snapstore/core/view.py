"""The read side of the record layer: the tables' keys and :class:`View`.

A :class:`View` reads one consistent snapshot of the store, as typed records;
:class:`~snapstore.core.repo.Tx` (snapstore.core.repo) is a view that also writes.
The keys here are the ones both read and write (docs/format.md).
"""

from __future__ import annotations

import json
import os
import struct
from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import Any

from . import baseline, blobs
from .errors import BadInput, StoreCorrupt, UnknownSession, UnknownTurn
from .records import (
    OPEN,
    Big,
    Change,
    Entry,
    GitMove,
    Session,
    Turn,
    Version,
    index_version,
    loads,
)

_SEQ = struct.Struct(">I")
#: Longest session name, in bytes (an LMDB key holds 511).
MAX_NAME = 255
#: Record kinds whose raw entries fsck walks (and repair may drop).
RECORDS: dict[str, type] = {"turns": Turn, "sessions": Session, "changes": Change}
#: ``git`` keys: a move of a turn (``m`` turn id ``/`` sequence), the last value recorded of
#: a ref, HEAD, the index or the stash's reflog (``r`` name).
GIT_MOVE, GIT_VALUE = b"m", b"r"
#: A ``gitrefs`` value: the blob's size, then its git object id in hex.
REF_SIZE = struct.Struct(">Q")


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


def _parse_ref(key: bytes, value: bytes) -> tuple[str, int]:
    oid = value[REF_SIZE.size :].decode("ascii", "replace")
    if len(oid) not in (40, 64) or any(c not in "0123456789abcdef" for c in oid):
        raise StoreCorrupt(f"git reference {key.hex()[:12]} is malformed")
    return oid, REF_SIZE.unpack_from(value)[0]


#: Decoded groups a view holds at once (a walk meets each a few times, in order).
_GROUPS_HELD = 64


def _ref(group: baseline.Group, at: int) -> bytes:
    """A grouped file's reference key: its ``paths`` value (docs/format.md §2.4)."""
    return blobs.reference_key(group.oids[at].hex())


def _entry(group: baseline.Group, at: int) -> bytes:
    """A grouped file's scan-index value: its fingerprint and reference key."""
    return group.fingerprints[at] + _ref(group, at)


def _prefixed(cursor: Any, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
    """The entries of a cursor's database whose key starts with ``prefix``, in key order."""
    if cursor.set_range(prefix):
        for key, value in cursor:
            if not key.startswith(prefix):
                break
            yield key, value


class View:
    """Typed reads over one consistent snapshot of the store."""

    __slots__ = ("_dbs", "_groups", "_txn", "clock")

    def __init__(self, txn: Any, dbs: dict[str, Any], clock: Callable[[], float]):
        self._txn, self._dbs, self.clock = txn, dbs, clock
        self._groups: dict[bytes, baseline.Group] = {}  # decoded, by key (a Tx's changed ones)

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
        prefix = GIT_MOVE + turn_id.encode() + b"/"
        return [loads(GitMove, raw) for _, raw in _prefixed(cursor, prefix)]

    def all_git_moves(self) -> Iterator[GitMove]:
        cursor = self._txn.cursor(db=self._dbs["git"])
        for _, raw in _prefixed(cursor, GIT_MOVE):
            yield loads(GitMove, raw)

    def git_value(self, name: str) -> str | None:
        """The last recorded value of ``name`` (None: absent, or never recorded)."""
        raw = self._get("git", GIT_VALUE + name.encode())
        return None if raw is None else bytes(raw).decode()

    def git_values(self) -> dict[str, str]:
        """Every recorded value: the repository as the last record saw it."""
        cursor = self._txn.cursor(db=self._dbs["git"])
        return {
            bytes(key[1:]).decode(): bytes(raw).decode()
            for key, raw in _prefixed(cursor, GIT_VALUE)
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

    def git_ref(self, key: bytes, rel: str) -> tuple[str, int] | None:
        """The git object id and size the reference key ``key`` of path ``rel`` stands for
        (None: ``key`` names no reference: a blob's digest, or nothing). A grouped file's
        reference is found by its path (core.baseline)."""
        value = self._get("gitrefs", key)
        if value is not None:
            return _parse_ref(key, bytes(value))
        found = self._grouped(os.fsencode(rel))
        if found is None or _ref(*found) != key:
            return None
        group, at = found
        return group.oids[at].hex(), baseline.size_of(group.fingerprints[at])

    def has_git_refs(self) -> bool:
        """Whether any version is known by reference (cursor steps: a scan asks it)."""
        return bool(self._txn.cursor(db=self._dbs["gitrefs"]).first()) or self.has_groups()

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
        key = os.fsencode(rel)
        found = self._get("paths", key)
        if found is not None:
            return found
        grouped = self._grouped(key)
        return None if grouped is None else _ref(*grouped)

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
        found = self._get("index", rel)
        if found is not None:
            return found
        grouped = self._grouped(rel)
        return None if grouped is None else _entry(*grouped)

    def index_entries(self) -> dict[bytes, bytes]:
        """Every index entry (a scan reads a folder at a time: :meth:`index_folder`)."""
        found = dict(self._grouped_below(b""))
        found.update(self._items("index"))
        return found

    def index_folder(self, prefix: bytes) -> tuple[dict[bytes, bytes], list[bytes]]:
        """One folder's index entries, for a walk that holds a folder at a time: the files
        directly in it (key -> value) and the names of its subfolders that hold entries.
        ``prefix`` is the folder's path and a slash (b"" for the root). A subfolder's
        entries are skipped in one seek each: b"0" is the byte after b"/".

        A grouped file's value is only its fingerprint (FINGERPRINT.size bytes): a walk
        compares fingerprints, and asks :meth:`index_entry` for the few it records."""
        files: dict[bytes, bytes] = {}
        folders: list[bytes] = []
        cursor = self._txn.cursor(db=self._dbs["index"])
        size = len(prefix)
        found = cursor.set_range(prefix)
        while found:
            key = cursor.key()
            if not key.startswith(prefix):
                break
            slash = key.find(b"/", size)
            if slash < 0:
                files[key] = cursor.value()
                found = cursor.next()
            else:
                folders.append(key[size:slash])
                found = cursor.set_range(key[:slash] + b"0")
        if self.has_groups():
            self._grouped_folder(prefix, files, folders)
            folders = list(dict.fromkeys(folders))
        return files, folders

    def index_below(self, rel: bytes) -> Iterator[tuple[bytes, bytes]]:
        """The index entries below folder ``rel``, in key order."""
        own = _prefixed(self._txn.cursor(db=self._dbs["index"]), rel + b"/")
        if not self.has_groups():
            return own
        return iter(sorted([*own, *self._grouped_below(rel + b"/")]))  # two sorted runs

    def index_values(self) -> Iterator[bytes]:
        for _, value in self._items("index"):
            yield bytes(value)

    def indexed_below(self, folder: str) -> bool:
        """Whether any index entry lies below ``folder`` (its first one suffices)."""
        prefix = os.fsencode(folder) + b"/"
        if next(_prefixed(self._txn.cursor(db=self._dbs["index"]), prefix), None) is not None:
            return True
        return self.has_groups() and next(self._grouped_below(prefix), None) is not None

    # -- the baseline's groups (core.baseline) -------------------------------------

    def has_own(self, rel: bytes | None = None) -> bool:
        """Whether ``rel`` has a ``paths`` or ``index`` record of its own (None: whether
        any path has)."""
        if rel is None:
            return any(self._txn.cursor(db=self._dbs[db]).first() for db in ("paths", "index"))
        return self._get("paths", rel) is not None or self._get("index", rel) is not None

    def has_groups(self) -> bool:
        return bool(self._txn.cursor(db=self._dbs["baseline"]).first())

    def groups(self) -> Iterator[tuple[bytes, baseline.Group | StoreCorrupt]]:
        """Every group in key order, or why its record does not decode (fsck)."""
        for key, _ in self._items("baseline"):
            try:
                yield bytes(key), self._group(bytes(key))
            except StoreCorrupt as exc:
                yield bytes(key), exc

    def grouped_files(self) -> Iterator[tuple[bytes, bytes, bytes]]:
        """Every grouped file: its path, fingerprint and raw object id, in path order."""
        for _, group in self.groups():
            if isinstance(group, StoreCorrupt):
                raise group
            yield from zip(group.paths, group.fingerprints, group.oids, strict=True)

    def _group(self, key: bytes) -> baseline.Group:
        group = self._groups.get(key)
        if group is None:
            value = self._get("baseline", key)
            if value is None:
                raise StoreCorrupt(f"baseline group {key[:60]!r} vanished")
            group = baseline.decode(key, bytes(value))
            if len(self._groups) >= _GROUPS_HELD:
                self._forget_groups()
            self._groups[key] = group
        return group

    def _forget_groups(self) -> None:
        self._groups.clear()

    def _group_of(self, path: bytes) -> baseline.Group | None:
        """The group whose range holds ``path`` if any does, else the first after it."""
        cursor = self._txn.cursor(db=self._dbs["baseline"])
        if cursor.set_range(path):
            if cursor.key() != path and not cursor.prev():
                cursor.first()
        elif not cursor.last():
            return None
        return self._group(bytes(cursor.key()))

    def _group_after(self, key: bytes) -> baseline.Group | None:
        cursor = self._txn.cursor(db=self._dbs["baseline"])
        if not cursor.set_range(key + b"\0"):
            return None
        return self._group(bytes(cursor.key()))

    def _grouped(self, path: bytes) -> tuple[baseline.Group, int] | None:
        """The group that holds ``path``, and its place in it (None: no group does)."""
        group = self._group_of(path)
        at = -1 if group is None else group.find(path)
        return None if group is None or at < 0 else (group, at)

    def _grouped_below(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """The grouped files whose path starts with ``prefix``, as index entries, in order."""
        group = self._group_of(prefix)
        while group is not None:
            paths = group.paths
            for at in range(bisect_left(paths, prefix), len(paths)):
                if not paths[at].startswith(prefix):
                    return
                yield paths[at], _entry(group, at)
            group = self._group_after(group.key)

    def _grouped_folder(
        self, prefix: bytes, files: dict[bytes, bytes], folders: list[bytes]
    ) -> None:
        """:meth:`index_folder` for the grouped files: each subfolder skipped in a seek."""
        size, pos = len(prefix), prefix
        group = self._group_of(pos)
        while group is not None:
            paths = group.paths
            at = bisect_left(paths, pos)
            while at < len(paths):
                path = paths[at]
                if not path.startswith(prefix):
                    return
                slash = path.find(b"/", size)
                if slash < 0:
                    files.setdefault(path, group.fingerprints[at])
                    at += 1
                else:
                    folders.append(path[size:slash])
                    pos = path[:slash] + b"0"
                    at = bisect_left(paths, pos, at)
            if paths and pos > paths[-1]:
                found = self._group_of(pos)
                if found is not None and found.key > group.key:
                    group = found
                    continue
            group = self._group_after(group.key)

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

    def scan_state(self) -> bytes | None:
        """What the last full scan recorded (baseline time, ignore-rule stamp, folders), as
        stored: JSON, which the scan decodes (snapstore.ops.scan.ScanMemo)."""
        return self._get("meta", b"scan")

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
