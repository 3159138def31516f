"""Verifying a store, and repairing what cannot be recovered.

``fsck`` reads everything once, in one read transaction:

- every blob through :meth:`View.blob`, the very check every read makes
  (each level of the delta chain decodes to its recorded size and hashes to
  its key, and each delta records its base's depth plus one);
- every record parses; every change's turn exists and its ``before`` and
  ``after`` blobs exist and read back; so does every move of the repository's
  (an index, a stash list);
- every turn's parent and previous rewind exist; every head, every session's
  open turn and last rewind, every pending operation and every ``paths`` entry
  points at something that exists; a ``paths`` entry known by reference to git
  (snapstore.ops.gitbase), and each file of a baseline group (snapstore.core.baseline),
  names an object git still gives back, whole and matching its id.

An interrupted rewind (``meta/unfinished``) is not a problem: it is reported so
that it can be resumed. With ``repair``, what cannot be recovered is dropped in
one commit, and every drop is described: a corrupt blob and every change that
needed it, an orphan change, a dangling head or link (cleared).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..core.baseline import size_of
from ..core.blobs import DIGEST_SIZE, reference_key
from ..core.errors import StoreCorrupt
from ..core.records import Change, GitMove, Session, Turn
from ..core.repo import Repo, Tx
from ..core.view import View
from ..git.files import blob_keys


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
        return {
            "ok": self.ok,
            "blobs_checked": self.blobs_checked,
            "corrupt": self.corrupt,
            "dangling": self.dangling,
            "pending": self.pending,
            "repaired": self.repaired,
        }


@dataclass
class _Findings:
    """The findings of one pass, with what a repair needs to act on them."""

    report: FsckReport = field(default_factory=FsckReport)
    bad_blobs: set[bytes] = field(default_factory=set)
    bad_records: list[tuple[str, bytes]] = field(default_factory=list)  # (kind, key) to drop
    bad_changes: dict[bytes, str] = field(default_factory=dict)  # change key -> what was lost
    bad_paths: list[str] = field(default_factory=list)
    bad_groups: list[bytes] = field(default_factory=list)  # baseline groups to drop
    #: a move of the repository to drop: "turn/seq" -> (the move, what is lost)
    bad_moves: dict[str, tuple[GitMove, str]] = field(default_factory=dict)
    turns: dict[str, Turn] = field(default_factory=dict)
    sessions: dict[str, Session] = field(default_factory=dict)

    def corrupt(self, kind: str, key: str, reason: str) -> None:
        self.report.corrupt.append({"kind": kind, "key": key, "reason": reason})

    def dangling(self, kind: str, key: str, missing: str, reason: str) -> None:
        self.report.dangling.append(
            {"kind": kind, "key": key, "missing": missing, "reason": reason}
        )


def fsck(repo: Repo, repair: bool = False) -> FsckReport:
    """Verify the whole store; with ``repair``, drop what cannot be recovered."""
    if not repair:
        with repo.read() as v:
            return _check(repo, v).report
    with repo.lock() as w:
        with repo.read() as v:
            found = _check(repo, v)
        if not found.report.ok:
            w.write(lambda tx: _repair(tx, found))
    return found.report


def _check(repo: Repo, v: View) -> _Findings:
    found = _Findings()
    for key, _ in v.blob_values():
        found.report.blobs_checked += 1
        try:
            if len(key) != DIGEST_SIZE:
                raise StoreCorrupt(f"blob key {key.hex()[:24]} is not a digest")
            for _ in v.pieces(key):  # a big file's chunks one at a time, then the whole
                pass
        except StoreCorrupt as exc:
            found.bad_blobs.add(key)
            found.corrupt("blob", key.hex(), str(exc))
    _load_records(v, found)
    for key, change in v.records("changes"):
        _check_change(v, found, key, change)
    _check_links(v, found)
    _check_references(repo, v, found)
    _check_git(v, found)
    found.report.pending = v.unfinished()
    return found


def _check_git(v: View, found: _Findings) -> None:
    """Each move of the repository belongs to a turn, and the blobs it names (an index, a
    stash list) can be read."""
    for move in v.all_git_moves():
        label = f"{move.turn}/{move.seq}"
        if move.turn not in found.turns:
            found.dangling("git move", label, move.turn, "its turn does not exist")
            found.bad_moves[label] = (move, f"a move of {move.name} of missing turn {move.turn}")
            continue
        for key in blob_keys(move.name, move.old, move.new):
            if not v.has_blob(key) or key in found.bad_blobs:
                found.dangling("git move", label, key.hex(), f"the {move.name} it names is missing")
                found.bad_moves[label] = (
                    move,
                    f"turn {move.turn}: the move of {move.name} (its blob {key.hex()[:12]} "
                    "cannot be read)",
                )


def _load_records(v: View, found: _Findings) -> None:
    for kind, into in (("turns", found.turns), ("sessions", found.sessions)):
        for key, record in v.records(kind):
            if isinstance(record, StoreCorrupt):
                found.bad_records.append((kind, key))
                found.corrupt(kind[:-1], key.decode(errors="replace"), str(record))
                continue
            into[record.id if kind == "turns" else record.name] = record


def _check_change(v: View, found: _Findings, key: bytes, change: Change | StoreCorrupt) -> None:
    label = key[:-5].decode(errors="replace") + f"/{int.from_bytes(key[-4:], 'big')}"
    if isinstance(change, StoreCorrupt):
        found.bad_records.append(("changes", key))
        found.corrupt("change", label, str(change))
        return
    if change.turn not in found.turns:
        found.dangling("change", label, change.turn, "its turn does not exist")
        found.bad_changes[key] = f"change to {change.path} of missing turn {change.turn}"
        return
    for side, version in (("before", change.before), ("after", change.after)):
        if version is None:
            continue
        if not v.has_blob(version.key):
            found.dangling("change", label, version.digest, f"its {side} blob is missing")
        elif version.key not in found.bad_blobs:
            continue
        found.bad_changes[key] = (
            f"turn {change.turn}: the change to {change.path} "
            f"(its {side} version {version.digest[:12]} cannot be read)"
        )


def _check_links(v: View, found: _Findings) -> None:
    turns = found.turns
    for turn in turns.values():
        if turn.parent is not None and turn.parent not in turns:
            found.dangling("turn", turn.id, turn.parent, "its parent turn does not exist")
        if turn.op is not None and turn.op.prev_rewind not in (None, *turns):
            found.dangling(
                "turn", turn.id, str(turn.op.prev_rewind), "its previous rewind does not exist"
            )
    for session, head in v.heads():
        if head not in turns:
            found.dangling("head", session, head, "the head points at a turn that does not exist")
    for record in found.sessions.values():
        for name in ("open_turn", "last_rewind"):
            ref = getattr(record, name)
            if ref is not None and ref not in turns:
                found.dangling("session", record.name, ref, f"its {name} does not exist")
    for op_id in v.unfinished():
        if op_id not in turns:
            found.dangling("pending", op_id, op_id, "the interrupted operation has no record")
    for rel, digest in v.path_digests():
        if v.git_ref(digest, rel) is not None:
            continue  # known by reference to git: _check_references
        if not v.has_blob(digest) or digest in found.bad_blobs:
            found.bad_paths.append(rel)
            found.dangling("path", rel, digest.hex(), "its latest version cannot be read")


def _check_references(repo: Repo, v: View, found: _Findings) -> None:
    """Each version known by reference must come back from git whole: a malformed
    reference or group of the baseline is corrupt, and a path whose object git lacks (or
    gives back otherwise than its id says) cannot be read."""
    refs: dict[bytes, tuple[str, int]] = {}
    for key, ref in v.git_refs():
        if isinstance(ref, StoreCorrupt):
            found.corrupt("git reference", key.hex(), str(ref))
        else:
            refs[key] = ref
    named = {rel: (digest, refs[digest]) for rel, digest in v.path_digests() if digest in refs}
    last = b""
    for key, group in v.groups():
        if isinstance(group, StoreCorrupt) or key <= last:
            why = str(group) if isinstance(group, StoreCorrupt) else "overlaps the one before"
            found.corrupt("baseline group", os.fsdecode(key), why)
            found.bad_groups.append(key)
            continue
        last = group.paths[-1]
        for path, fp, oid in zip(group.paths, group.fingerprints, group.oids, strict=True):
            ref = (oid.hex(), size_of(fp))
            named[os.fsdecode(path)] = (reference_key(ref[0]), ref)
    if not named:
        return
    from .gitbase import check  # only a store that holds references starts git

    bad = check(repo, dict(named.values()))
    for rel, (digest, ref) in named.items():
        if digest in bad:
            found.bad_paths.append(rel)
            found.dangling("path", rel, ref[0], f"its baseline version is in git: {bad[digest]}")


def _repair(tx: Tx, found: _Findings) -> None:
    """Drop what cannot be recovered and clear links to it, saying what each step lost."""
    lost = found.report.repaired
    lost.clear()  # the transaction may run again after the map grows
    for key in sorted(found.bad_blobs):
        tx.delete_blob(key)
        lost.append(f"dropped blob {key.hex()[:12]}: its bytes do not match its digest")
    for key in found.bad_groups:
        tx.drop_group(key)
        lost.append(f"dropped the baseline group at {os.fsdecode(key)}: its files are new")
    for kind, key in found.bad_records:
        tx.delete_record(kind, key)
        lost.append(f"dropped a malformed {kind[:-1]} record {key.decode(errors='replace')}")
    for key, what in sorted(found.bad_changes.items()):
        tx.delete_record("changes", key)
        lost.append(f"dropped {what}; rewinds no longer restore that version")
    turns = found.turns
    for turn in turns.values():
        fixed = turn
        if turn.parent is not None and turn.parent not in turns:
            lost.append(
                f"turn {turn.id}: its parent {turn.parent} is gone; it now starts its branch"
            )
            fixed = fixed._replace(parent=None)
        if turn.op is not None and turn.op.prev_rewind not in (None, *turns):
            lost.append(f"rewind {turn.id}: its previous rewind {turn.op.prev_rewind} is gone")
            fixed = fixed._replace(op=turn.op._replace(prev_rewind=None))
        if fixed is not turn:
            tx.put_turn(fixed)
    for session, head in list(tx.heads()):
        if head not in turns:
            tx.set_head(session, None)
            lost.append(f"session {session}: its head {head} is gone; the session is at its start")
    for record in found.sessions.values():
        for name in ("open_turn", "last_rewind"):
            if getattr(record, name) not in (None, *turns):
                lost.append(
                    f"session {record.name}: cleared its {name} "
                    f"{getattr(record, name)}, which is gone"
                )
                cleared: dict[str, Any] = {name: None}
                record = record._replace(**cleared)
                tx.put_session(record)
    dropped = tx.drop_unfinished(lambda op: op in turns)
    if dropped:
        lost.append("cleared interrupted operations that have no record: " + ", ".join(dropped))
    for _, (move, what) in sorted(found.bad_moves.items()):
        tx.delete_git_move(move)
        lost.append(f"dropped {what}; rewinds no longer restore it")
    for rel in found.bad_paths:
        tx.forget_path(rel)
        lost.append(f"{rel}: forgot its latest version (the next capture stores it in full)")
