"""Verifying a store, and repairing what cannot be recovered.

``fsck`` reads everything once, in one read transaction:

- every blob through :meth:`Store.read_blob`, the very check every read makes
  (each level of the delta chain decodes to its recorded size and hashes to
  its key, and each delta records its base's depth plus one);
- every record parses; every change's turn exists and its ``before`` and
  ``after`` blobs exist and read back;
- every turn's parent and previous rewind exist; every head, every session's
  open turn and last rewind, every pending operation and every ``paths`` entry
  points at something that exists.

An interrupted rewind (``meta/pending``) is not a problem: it is reported so
that it can be resumed. With ``repair``, what cannot be recovered is dropped in
one commit, and every drop is described: a corrupt blob and every change that
needed it, an orphan change, a dangling head or link (cleared).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import StoreCorrupt
from .records import Change, Session, Turn, Version, dumps, loads

if TYPE_CHECKING:
    import lmdb

    from .store import Store

DIGEST_SIZE = 32


@dataclass
class FsckReport:
    """What fsck found, and with ``repair``, what it dropped or cleared."""

    blobs_checked: int = 0
    corrupt: list[dict[str, str]] = field(default_factory=list)
    dangling: list[dict[str, str]] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.corrupt and not self.dangling

    def to_json(self) -> dict[str, object]:
        return {"ok": self.ok, "blobs_checked": self.blobs_checked, "corrupt": self.corrupt,
                "dangling": self.dangling, "pending": self.pending, "repaired": self.repaired}


@dataclass
class _Scan:
    """The findings of one pass, with what a repair needs to act on them."""

    report: FsckReport = field(default_factory=FsckReport)
    bad_blobs: set[bytes] = field(default_factory=set)
    bad_records: list[tuple[str, bytes]] = field(default_factory=list)  # (db, key) to delete
    bad_changes: dict[bytes, str] = field(default_factory=dict)  # change key -> what was lost
    bad_paths: list[bytes] = field(default_factory=list)
    turns: dict[str, Turn] = field(default_factory=dict)
    sessions: dict[str, Session] = field(default_factory=dict)

    def corrupt(self, kind: str, key: str, reason: str) -> None:
        self.report.corrupt.append({"kind": kind, "key": key, "reason": reason})

    def dangling(self, kind: str, key: str, missing: str, reason: str) -> None:
        self.report.dangling.append({"kind": kind, "key": key, "missing": missing,
                                     "reason": reason})


def fsck(store: Store, repair: bool = False) -> FsckReport:
    """Verify the whole store; with ``repair``, drop what cannot be recovered."""
    if not repair:
        with store.db.read() as txn:
            return _check(store, txn).report
    with store.db.write_lock():
        with store.db.read() as txn:
            scan = _check(store, txn)
        if not scan.report.ok:
            store.db.write(lambda txn: _repair(store, txn, scan), locked=True)
    return scan.report


def _check(store: Store, txn: lmdb.Transaction) -> _Scan:
    scan = _Scan()
    dbs = store.db.dbs
    for key, _ in txn.cursor(db=dbs["blobs"]):
        scan.report.blobs_checked += 1
        try:
            if len(key) != DIGEST_SIZE:
                raise StoreCorrupt(f"blob key {key.hex()[:24]} is not a digest")
            store.read_blob(txn, key)
        except StoreCorrupt as exc:
            scan.bad_blobs.add(bytes(key))
            scan.corrupt("blob", key.hex(), str(exc))
    _load_records(store, txn, scan)
    for key, raw in txn.cursor(db=dbs["changes"]):
        _check_change(txn, scan, bytes(key), raw, dbs["blobs"])
    _check_links(store, txn, scan)
    scan.report.pending = list(store.db.get_json(txn, "meta", b"pending") or [])
    return scan


def _load_records(store: Store, txn: lmdb.Transaction, scan: _Scan) -> None:
    for name, cls, into in (("turns", Turn, scan.turns), ("sessions", Session, scan.sessions)):
        for key, raw in txn.cursor(db=store.db.dbs[name]):
            try:
                record = loads(cls, raw)
            except StoreCorrupt as exc:
                scan.bad_records.append((name, bytes(key)))
                scan.corrupt(name[:-1], key.decode(errors="replace"), str(exc))
                continue
            into[record.id if cls is Turn else record.name] = record


def _check_change(txn: lmdb.Transaction, scan: _Scan, key: bytes, raw: bytes,
                  blob_db: object) -> None:
    label = key[:-5].decode(errors="replace") + f"/{int.from_bytes(key[-4:], 'big')}"
    try:
        change = loads(Change, raw)
    except StoreCorrupt as exc:
        scan.bad_records.append(("changes", key))
        scan.corrupt("change", label, str(exc))
        return
    if change.turn not in scan.turns:
        scan.dangling("change", label, change.turn, "its turn does not exist")
        scan.bad_changes[key] = f"change to {change.path} of missing turn {change.turn}"
        return
    for side, version in (("before", change.before), ("after", change.after)):
        digest = _digest(version)
        if digest is None:
            continue
        if txn.get(digest, db=blob_db) is None:
            scan.dangling("change", label, version.digest, f"its {side} blob is missing")
        elif digest not in scan.bad_blobs:
            continue
        scan.bad_changes[key] = (f"turn {change.turn}: the change to {change.path} "
                                 f"(its {side} version {version.digest[:12]} cannot be read)")


def _check_links(store: Store, txn: lmdb.Transaction, scan: _Scan) -> None:
    turns = scan.turns
    for turn in turns.values():
        if turn.parent is not None and turn.parent not in turns:
            scan.dangling("turn", turn.id, turn.parent, "its parent turn does not exist")
        if turn.op is not None and turn.op.prev_rewind not in (None, *turns):
            scan.dangling("turn", turn.id, str(turn.op.prev_rewind),
                          "its previous rewind does not exist")
    for key, raw in txn.cursor(db=store.db.dbs["heads"]):
        if raw.decode(errors="replace") not in turns:
            scan.dangling("head", key.decode(errors="replace"), raw.decode(errors="replace"),
                          "the head points at a turn that does not exist")
    for session in scan.sessions.values():
        for name in ("open_turn", "last_rewind"):
            ref = getattr(session, name)
            if ref is not None and ref not in turns:
                scan.dangling("session", session.name, ref, f"its {name} does not exist")
    for op_id in store.db.get_json(txn, "meta", b"pending") or []:
        if op_id not in turns:
            scan.dangling("pending", op_id, op_id, "the interrupted operation has no record")
    blob_db = store.db.dbs["blobs"]
    for key, digest in txn.cursor(db=store.db.dbs["paths"]):
        if txn.get(digest, db=blob_db) is None or bytes(digest) in scan.bad_blobs:
            scan.bad_paths.append(bytes(key))
            scan.dangling("path", os.fsdecode(key), bytes(digest).hex(),
                          "its latest version cannot be read")


def _digest(version: Version | None) -> bytes | None:
    return None if version is None else bytes.fromhex(version.digest)


def _repair(store: Store, txn: lmdb.Transaction, scan: _Scan) -> None:
    """Drop what cannot be recovered and clear links to it, saying what each step lost."""
    dbs = store.db.dbs
    lost = scan.report.repaired
    lost.clear()  # the transaction may run again after the map grows
    for key in sorted(scan.bad_blobs):
        txn.delete(key, db=dbs["blobs"])
        lost.append(f"dropped blob {key.hex()[:12]}: its bytes do not match its digest")
    for name, key in scan.bad_records:
        txn.delete(key, db=dbs[name])
        lost.append(f"dropped a malformed {name[:-1]} record {key.decode(errors='replace')}")
    for key, what in sorted(scan.bad_changes.items()):
        txn.delete(key, db=dbs["changes"])
        lost.append(f"dropped {what}; rewinds no longer restore that version")
    turns = scan.turns
    for turn in turns.values():
        fixed = turn
        if turn.parent is not None and turn.parent not in turns:
            lost.append(f"turn {turn.id}: its parent {turn.parent} is gone; it now starts "
                        "its branch")
            fixed = fixed._replace(parent=None)
        if turn.op is not None and turn.op.prev_rewind not in (None, *turns):
            lost.append(f"rewind {turn.id}: its previous rewind {turn.op.prev_rewind} is gone")
            fixed = fixed._replace(op=turn.op._replace(prev_rewind=None))
        if fixed is not turn:
            txn.put(turn.id.encode(), dumps(fixed), db=dbs["turns"])
    for key, raw in list(txn.cursor(db=dbs["heads"])):
        if raw.decode(errors="replace") not in turns:
            txn.delete(key, db=dbs["heads"])
            lost.append(f"session {key.decode(errors='replace')}: its head "
                        f"{raw.decode(errors='replace')} is gone; the session is at its start")
    for session in scan.sessions.values():
        for name in ("open_turn", "last_rewind"):
            if getattr(session, name) not in (None, *turns):
                lost.append(f"session {session.name}: cleared its {name} "
                            f"{getattr(session, name)}, which is gone")
                session = session._replace(**{name: None})
                store.put_session(txn, session)
    pending = store.db.get_json(txn, "meta", b"pending") or []
    if any(op not in turns for op in pending):
        lost.append("cleared interrupted operations that have no record: "
                    + ", ".join(op for op in pending if op not in turns))
        store.db.put_json(txn, "meta", b"pending", [op for op in pending if op in turns])
    for key in scan.bad_paths:
        txn.delete(key, db=dbs["paths"])
        lost.append(f"{os.fsdecode(key)}: forgot its latest version (the next capture stores "
                    "it in full)")
