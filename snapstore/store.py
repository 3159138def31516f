"""The Store: one workspace, its LMDB database, and the operations on both.

``Store`` is the library's entry point. It owns the record helpers that every
operation shares (turns, sessions, heads, changes, blobs, events) and exposes
the operations themselves as methods that delegate to one module per concept:
``capture`` (the hooks), ``history`` (rewind points), ``rewind`` (planning) and
``journal`` (applying rewinds and undos durably). Those modules are imported
lazily so that the hook path loads only what it uses.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import blake3
import lmdb

from . import blobs
from .db import INITIAL_MAP_SIZE, Database
from .errors import BadInput, NotFound, StoreCorrupt
from .fsio import Entry, Workspace
from .records import (
    CLOSED,
    OPEN,
    Change,
    Session,
    Turn,
    Version,
    dumps,
    loads,
    unscanned_fingerprint,
)

if TYPE_CHECKING:
    from .capture import CaptureResult
    from .fsck import FsckReport
    from .gc import GcPolicy, GcResult
    from .history import RewindPoint, StoreStatus, TurnDetail
    from .journal import RewindResult
    from .scan import ScanResult

STORE_DIRNAME = ".snapstore"
DEFAULT_SESSION = "default"
_SEQ = struct.Struct(">I")
_EVENT = struct.Struct(">Q")
MAX_NAME = 255


def find_root(start: str | os.PathLike[str]) -> str | None:
    """The nearest folder at or above ``start`` that holds a ``.snapstore`` store."""
    path = os.path.realpath(start)
    while True:
        if os.path.lexists(os.path.join(path, STORE_DIRNAME)):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def exclude_from_git(root: str, store_dir: str) -> bool:
    """Add the store to ``.git/info/exclude`` when the workspace is a git repo.

    Returns whether a line was added. A ``.git`` file (a worktree) is left alone.
    """
    git_dir = os.path.join(root, ".git")
    store = os.path.realpath(store_dir)
    if not os.path.isdir(git_dir) or not store.startswith(root + os.sep):
        return False
    line = "/" + os.path.relpath(store, root).replace(os.sep, "/") + "/"
    exclude = os.path.join(git_dir, "info", "exclude")
    try:
        with open(exclude, encoding="utf-8") as handle:
            existing = handle.read()
    except FileNotFoundError:
        existing = ""
    if line in existing.splitlines():
        return False
    os.makedirs(os.path.dirname(exclude), exist_ok=True)
    with open(exclude, "a", encoding="utf-8") as handle:
        if existing and not existing.endswith("\n"):
            handle.write("\n")
        handle.write(line + "\n")
    return True


class Store:
    """A snapstore store for one workspace.

    Open one with :meth:`Store.open` (or create one with :meth:`Store.init`) and
    close it when done, or use it as a context manager. A Store must not be used
    across ``fork()``.
    """

    def __init__(self, root: str | os.PathLike[str] | None, *, store_dir: str | None = None,
                 create: bool = False, clock: Callable[[], float] | None = None,
                 lock_timeout: float = 10.0, map_size: int = INITIAL_MAP_SIZE):
        if root is None and store_dir is None:
            raise ValueError("a Store needs its workspace root or its store folder")
        root = None if root is None else os.path.realpath(root)
        if create and root is not None and not os.path.isdir(root):
            raise BadInput(f"workspace root {root} is not a folder")  # create nothing there
        self.store_dir = os.path.abspath(store_dir or os.path.join(str(root), STORE_DIRNAME))
        self.db = Database(self.store_dir, create=create, lock_timeout=lock_timeout,
                           map_size=map_size,
                           meta=None if root is None else {b"root": os.fsencode(root)})
        try:
            if root is None:
                with self.db.read() as txn:
                    recorded = txn.get(b"root", db=self.db.dbs["meta"])
                if recorded is None:
                    raise StoreCorrupt(f"the store at {self.store_dir} records no workspace root")
                root = os.fsdecode(bytes(recorded))
            self.ws = Workspace(root, self.store_dir)
        except BaseException:
            self.db.close()
            raise
        self.clock = clock or time.time

    @classmethod
    def init(cls, root: str | os.PathLike[str] | None, **options: Any) -> Store:
        """Create the store for ``root`` (idempotent) and open it."""
        return cls(root, create=True, **options)

    @classmethod
    def open(cls, root: str | os.PathLike[str] | None, **options: Any) -> Store:
        """Open the existing store of ``root``."""
        return cls(root, **options)

    @property
    def root(self) -> str:
        return self.ws.root

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- capture (snapstore.capture) ---------------------------------------------

    def begin_turn(self, session: str = DEFAULT_SESSION, prompt: str = "",
                   message_id: str | None = None, scan: bool = False) -> Turn:
        """Open a turn for one user message, as a child of the session's head.

        ``scan`` first records what changed since the last scan (scan mode).
        """
        from .capture import begin_turn
        return begin_turn(self, session, prompt, message_id, scan)

    def pre_write(self, paths: Iterable[str | os.PathLike[str]], tool: str = "",
                  session: str = DEFAULT_SESSION) -> CaptureResult:
        """Capture the current bytes of ``paths`` before the agent writes them."""
        from .capture import pre_write
        return pre_write(self, paths, tool, session)

    def post_write(self, paths: Iterable[str | os.PathLike[str]],
                   session: str = DEFAULT_SESSION) -> CaptureResult:
        """Record what the agent wrote to ``paths``."""
        from .capture import post_write
        return post_write(self, paths, session)

    def end_turn(self, session: str = DEFAULT_SESSION, scan: bool = False) -> Turn:
        """Close the session's open turn, recording any ``after`` still missing.

        ``scan`` first records, in this turn, what shell commands changed.
        """
        from .capture import end_turn
        return end_turn(self, session, scan)

    def scan(self, session: str | None = None,
             paths: Iterable[str | os.PathLike[str]] | None = None,
             progress: Callable[[str, int, int], None] | None = None,
             max_file_size: int | None = None, use_watcher: bool = True) -> ScanResult:
        """Record what changed on disk since the last scan (see snapstore.scan).

        A running ``snapstore watch`` already knows what changed; a scan of the
        whole workspace asks it instead of walking, unless ``use_watcher`` is false.
        """
        from .scan import DEFAULT_MAX_FILE_SIZE, scan
        if paths is None and use_watcher:
            from .watch import ask_watcher
            answer = ask_watcher(self, session)
            if answer is not None:
                return answer
        return scan(self, session, paths, progress=progress,
                    max_file_size=max_file_size or DEFAULT_MAX_FILE_SIZE)

    def writing(self, paths: Iterable[str | os.PathLike[str]], tool: str = "",
                session: str = DEFAULT_SESSION) -> Any:
        """Context manager: ``pre_write`` on entry, ``post_write`` on exit."""
        from .capture import writing
        return writing(self, paths, tool, session)

    # -- history (snapstore.history) ---------------------------------------------

    def rewind_points(self, session: str = DEFAULT_SESSION,
                      all_branches: bool = False) -> list[RewindPoint]:
        """Rewind points, newest first, numbered 1..N on the current branch."""
        from .history import rewind_points
        return rewind_points(self, session, all_branches)

    def resolve_turn(self, ref: str | int, session: str = DEFAULT_SESSION) -> Turn:
        """A turn from a number shown by ``log`` or an id (or unique id prefix)."""
        from .history import resolve_turn
        return resolve_turn(self, ref, session)

    def show(self, ref: str | int, session: str = DEFAULT_SESSION) -> TurnDetail:
        """One turn with per-file stats."""
        from .history import show
        return show(self, ref, session)

    def status(self, session: str = DEFAULT_SESSION) -> StoreStatus:
        """What the store holds."""
        from .history import status
        return status(self, session)

    # -- rewind (snapstore.rewind, snapstore.journal) -----------------------------

    def rewind(self, target: str | int, session: str = DEFAULT_SESSION, *, mode: str = "both",
               on_conflict: str = "skip", paths: Iterable[str] | None = None,
               dry_run: bool = False, force: bool = False) -> RewindResult:
        """Take back ``target`` and every later turn on the session's branch."""
        from .journal import rewind
        return rewind(self, target, session, mode=mode, on_conflict=on_conflict,
                      paths=paths, dry_run=dry_run, force=force)

    def undo(self, rewind_id: str | None = None, session: str = DEFAULT_SESSION, *,
             on_conflict: str = "skip", dry_run: bool = False) -> RewindResult:
        """Take back the last rewind of the session (or the one given)."""
        from .journal import undo
        return undo(self, rewind_id, session, on_conflict=on_conflict, dry_run=dry_run)

    def pending_operations(self) -> list[str]:
        """Rewinds or undos that were interrupted before they finished."""
        with self.db.read() as txn:
            return list(self.db.get_json(txn, "meta", b"pending") or [])

    def resume(self) -> list[RewindResult]:
        """Finish every interrupted rewind or undo."""
        from .journal import resume
        return resume(self)

    # -- maintenance (snapstore.fsck, snapstore.gc) -------------------------------

    def fsck(self, repair: bool = False) -> FsckReport:
        """Verify every blob and reference; with ``repair``, drop what cannot be recovered."""
        from .fsck import fsck
        return fsck(self, repair)

    def gc(self, policy: GcPolicy | None = None, *, dry_run: bool = False,
           compact: bool = True) -> GcResult:
        """Drop turns the policy does not keep, sweep unneeded blobs, compact the file."""
        from .gc import GcPolicy, gc
        return gc(self, policy or GcPolicy(), dry_run=dry_run, compact=compact)

    # -- records -----------------------------------------------------------------

    def get_turn(self, txn: lmdb.Transaction, turn_id: str) -> Turn:
        raw = txn.get(turn_id.encode(), db=self.db.dbs["turns"])
        if raw is None:
            raise NotFound(f"unknown turn {turn_id}")
        return loads(Turn, raw)

    def put_turn(self, txn: lmdb.Transaction, turn: Turn) -> None:
        txn.put(turn.id.encode(), dumps(turn), db=self.db.dbs["turns"])

    def iter_turns(self, txn: lmdb.Transaction) -> Iterator[Turn]:
        for _, raw in txn.cursor(db=self.db.dbs["turns"]):
            yield loads(Turn, raw)

    def get_session(self, txn: lmdb.Transaction, name: str) -> Session | None:
        raw = txn.get(session_key(name), db=self.db.dbs["sessions"])
        return None if raw is None else loads(Session, raw)

    def require_session(self, txn: lmdb.Transaction, name: str) -> Session:
        session = self.get_session(txn, name)
        if session is None:
            raise NotFound(f"unknown session {name!r}")
        return session

    def put_session(self, txn: lmdb.Transaction, session: Session) -> None:
        txn.put(session_key(session.name), dumps(session), db=self.db.dbs["sessions"])

    def get_head(self, txn: lmdb.Transaction, session: str) -> str | None:
        raw = txn.get(session_key(session), db=self.db.dbs["heads"])
        return None if raw is None else raw.decode()

    def set_head(self, txn: lmdb.Transaction, session: str, turn_id: str | None) -> None:
        if turn_id is None:
            txn.delete(session_key(session), db=self.db.dbs["heads"])
        else:
            txn.put(session_key(session), turn_id.encode(), db=self.db.dbs["heads"])

    def new_turn(self, txn: lmdb.Transaction, session: str, **fields: Any) -> Turn:
        """Allocate a fresh turn id from the store's counter (ids are stable for a store)."""
        meta = self.db.dbs["meta"]
        seq = int(txn.get(b"turn_seq", b"0", db=meta)) + 1
        txn.put(b"turn_seq", str(seq).encode(), db=meta)
        store_id = txn.get(b"store_id", db=meta) or b""
        salt = 0
        while True:
            turn_id = blake3.blake3(b"%s:%d:%d" % (store_id, seq, salt)).hexdigest()[:12]
            if txn.get(turn_id.encode(), db=self.db.dbs["turns"]) is None and \
                    not turn_id.isdigit():
                break
            salt += 1
        return Turn(id=turn_id, session=session, seq=seq, created=self.clock(), **fields)

    def changes(self, txn: lmdb.Transaction, turn_id: str) -> list[Change]:
        """The changes of one turn, in the order they were recorded."""
        prefix = turn_id.encode() + b"/"
        cursor = txn.cursor(db=self.db.dbs["changes"])
        found = []
        if cursor.set_range(prefix):
            for key, raw in cursor:
                if not key.startswith(prefix):
                    break
                found.append(loads(Change, raw))
        return found

    def get_change(self, txn: lmdb.Transaction, turn_id: str, seq: int) -> Change:
        raw = txn.get(change_key(turn_id, seq), db=self.db.dbs["changes"])
        if raw is None:
            raise StoreCorrupt(f"turn {turn_id} lists change {seq}, which is missing")
        return loads(Change, raw)

    def put_change(self, txn: lmdb.Transaction, change: Change) -> None:
        txn.put(change_key(change.turn, change.seq), dumps(change), db=self.db.dbs["changes"])

    def delete_change(self, txn: lmdb.Transaction, change: Change) -> None:
        txn.delete(change_key(change.turn, change.seq), db=self.db.dbs["changes"])

    def event(self, txn: lmdb.Transaction, kind: str, **data: Any) -> None:
        """Append to the audit log."""
        cursor = txn.cursor(db=self.db.dbs["events"])
        seq = _EVENT.unpack(cursor.key())[0] + 1 if cursor.last() else 1
        record = {"seq": seq, "time": self.clock(), "type": kind, **data}
        self.db.put_json(txn, "events", _EVENT.pack(seq), record)

    def events(self) -> list[dict[str, Any]]:
        """The whole audit log, oldest first."""
        import json
        with self.db.read() as txn:
            return [json.loads(raw) for _, raw in txn.cursor(db=self.db.dbs["events"])]

    def set_pending(self, txn: lmdb.Transaction, op_id: str, pending: bool) -> None:
        ops = [op for op in self.db.get_json(txn, "meta", b"pending") or [] if op != op_id]
        if pending:
            ops.append(op_id)
        self.db.put_json(txn, "meta", b"pending", ops)

    def open_turn(self, txn: lmdb.Transaction, session: str) -> Turn | None:
        record = self.get_session(txn, session)
        if record is None or record.open_turn is None:
            return None
        turn = self.get_turn(txn, record.open_turn)
        return turn if turn.state == OPEN else None

    def close_turn(self, txn: lmdb.Transaction, turn: Turn) -> Turn:
        turn = turn._replace(state=CLOSED, closed=self.clock())
        self.put_turn(txn, turn)
        record = self.require_session(txn, turn.session)
        if record.open_turn == turn.id:
            self.put_session(txn, record._replace(open_turn=None))
        self.event(txn, "turn_end", session=turn.session, turn=turn.id)
        return turn

    # -- blobs -------------------------------------------------------------------

    def path_digest(self, txn: lmdb.Transaction, rel: str) -> bytes | None:
        """The latest digest recorded for ``rel`` (the delta base for its next version)."""
        return txn.get(os.fsencode(rel), db=self.db.dbs["paths"])

    def set_path_digest(self, txn: lmdb.Transaction, rel: str, version: Version | None) -> None:
        key = os.fsencode(rel)
        if version is None:
            txn.delete(key, db=self.db.dbs["paths"])
        else:
            digest = bytes.fromhex(version.digest)
            txn.put(key, digest, db=self.db.dbs["paths"])
            if txn.get(key, db=self.db.dbs["index"]) is not None:  # scan mode: re-read it
                txn.put(key, unscanned_fingerprint(version) + digest, db=self.db.dbs["index"])

    def encode_blob(self, txn: lmdb.Transaction, data: bytes, base_key: bytes | None
                    ) -> tuple[bytes, bytes | None]:
        """The digest of ``data`` and its encoded value (None when already stored)."""
        key = blobs.digest(data)
        if txn.get(key, db=self.db.dbs["blobs"]) is not None:
            return key, None
        return key, self.encode_against(txn, data, key, base_key)

    def encode_against(self, txn: lmdb.Transaction, data: bytes, key: bytes,
                       base_key: bytes | None) -> bytes:
        """Encode ``data`` as a delta against ``base_key`` when that base is usable."""
        if base_key is not None and base_key != key:
            raw = txn.get(base_key, db=self.db.dbs["blobs"])
            if raw is not None:
                header = blobs.parse_header(raw, base_key)
                if header.depth < blobs.MAX_CHAIN and header.size <= blobs.MAX_DELTA_BASE:
                    try:
                        base = self.read_blob(txn, base_key)
                    except StoreCorrupt:
                        pass  # never delta against a bad base; store a full frame
                    else:
                        return blobs.encode(data, base, base_key, header.depth)
        return blobs.encode(data)

    def put_blob(self, txn: lmdb.Transaction, key: bytes, value: bytes | None,
                 data: bytes | None = None) -> None:
        """Store an encoded blob unless present.

        ``value`` may have been encoded before the write lock was taken. If gc
        has since removed the blob or its delta base, ``data`` is stored as a
        full frame instead, so a change never points at a missing blob; if gc
        moved the base up its chain, the recorded depth follows it.
        """
        db = self.db.dbs["blobs"]
        if value is not None and value[0] == blobs.DELTA and data is not None:
            header = blobs.parse_header(value, key)
            assert header.base is not None
            stored = txn.get(header.base, db=db)
            depth = None if stored is None else blobs.parse_header(stored, header.base).depth + 1
            if depth is None:
                value = None
            elif depth != header.depth:
                value = blobs.with_depth(value, depth)
        if value is None:
            if data is None or txn.get(key, db=db) is not None:
                return
            value = blobs.encode(data)
        txn.put(key, value, db=db, overwrite=False)

    def read_blob(self, txn: lmdb.Transaction, key: bytes) -> bytes:
        """The verified bytes of a blob, following its delta chain."""
        chain: list[tuple[bytes, bytes, blobs.BlobHeader]] = []
        current: bytes | None = key
        while current is not None:
            value = txn.get(current, db=self.db.dbs["blobs"])
            if value is None:
                what = "blob" if current == key else f"delta base {current.hex()[:12]} of blob"
                raise StoreCorrupt(f"{what} {key.hex()[:12]} is missing from the store")
            header = blobs.parse_header(value, current)
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

    def version_bytes(self, txn: lmdb.Transaction, version: Version | None) -> Entry | None:
        """Turn a recorded version back into workspace content."""
        if version is None:
            return None
        return Entry(version.kind, self.read_blob(txn, bytes.fromhex(version.digest)),
                     version.mode)


def session_key(name: str) -> bytes:
    """A session name as a database key; a name that cannot be one is bad input."""
    try:
        key = name.encode()
    except UnicodeEncodeError:
        raise BadInput(f"session name {name!r} is not valid UTF-8") from None
    if not key or len(key) > MAX_NAME or b"\0" in key:
        raise BadInput(f"session name {name[:40]!r} must be 1 to {MAX_NAME} bytes, without NUL")
    return key


def change_key(turn_id: str, seq: int) -> bytes:
    """The ``changes`` key: turn id, ``/``, 4-byte big-endian sequence."""
    return turn_id.encode() + b"/" + _SEQ.pack(seq)
