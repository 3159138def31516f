"""The capture protocol: begin a turn, capture before a write, record after, end.

Work that touches the disk or compresses (reading the files, hashing, encoding
blobs) happens before the write transaction, so parallel tool calls from
several processes hold the store's writer lock only for the commit. Each call
is one durable LMDB commit.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import NamedTuple

from . import faults
from .errors import NotFound, RunActive, SnapstoreError
from .records import CLOSED, Change, Session, Turn, Version, same
from .repo import Repo, Tx, View


class CaptureResult(NamedTuple):
    """What one capture call did: the paths protected and those it could not handle."""

    session: str
    turn: str | None
    paths: list[str]
    skipped: list[tuple[str, str]]


class _Prepared(NamedTuple):
    rel: str
    version: Version | None
    key: bytes | None = None
    value: bytes | None = None
    mkdirs: int = 0
    data: bytes | None = None  # kept to re-encode if gc ran between prepare and commit


def resolve_paths(repo: Repo, paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Validate every path before anything is read or written; duplicates collapse."""
    rels: dict[str, None] = {}
    for path in paths:
        rels[repo.ws.relpath(path)] = None
    return list(rels)


def prepare(repo: Repo, rels: Iterable[str], bases: dict[str, bytes | None] | None = None
            ) -> dict[str, _Prepared]:
    """Read each path and encode its bytes as a blob, ready to commit.

    The delta base is the path's latest recorded version unless ``bases`` says
    otherwise.
    """
    entries = {rel: repo.ws.read_state(rel)[0] for rel in rels}
    prepared = {}
    with repo.read() as v:
        for rel, entry in entries.items():
            if entry is None:
                prepared[rel] = _Prepared(rel, None, mkdirs=repo.ws.missing_parents(rel))
                continue
            base = bases[rel] if bases and rel in bases else v.path_digest(rel)
            key, value = v.encode(entry.data, base)
            prepared[rel] = _Prepared(rel, Version(key.hex(), entry.mode, entry.kind), key, value,
                                      data=entry.data)
    return prepared


def _start_turn(tx: Tx, session: str, prompt: str, message_id: str | None,
                implicit: bool) -> Turn:
    record = tx.session(session) or Session(session, tx.clock())
    turn = tx.new_turn(session, parent=tx.head(session), prompt=prompt, message_id=message_id,
                       implicit=implicit)
    tx.put_turn(turn)
    tx.put_session(record._replace(open_turn=turn.id, turns=record.turns + 1))
    tx.set_head(session, turn.id)
    tx.event("turn_begin", session=session, turn=turn.id, implicit=implicit)
    return turn


def close_turn(tx: Tx, turn: Turn) -> Turn:
    """Mark ``turn`` closed and no longer its session's open turn."""
    turn = turn._replace(state=CLOSED, closed=tx.clock())
    tx.put_turn(turn)
    record = tx.require_session(turn.session)
    if record.open_turn == turn.id:
        tx.put_session(record._replace(open_turn=None))
    tx.event("turn_end", session=turn.session, turn=turn.id)
    return turn


def begin_turn(repo: Repo, session: str, prompt: str = "", message_id: str | None = None,
               close_open: bool = False) -> Turn:
    """Open a turn as a child of the head.

    An implicit turn still open is closed first. An explicitly begun one is
    refused with :class:`RunActive`, unless ``close_open`` (an agent's new
    prompt: the turn whose end never came is over).
    """
    with repo.write_lock():
        finish_open_turn(repo, session, implicit_only=not close_open)
        return repo.write(lambda tx: _start_turn(tx, session, prompt, message_id, False),
                          locked=True)


def finish_open_turn(repo: Repo, session: str, implicit_only: bool = False) -> Turn | None:
    """Record the missing ``after`` of every change and close the open turn.

    With ``implicit_only``, an explicitly begun turn is refused with ``run_active``.
    The caller holds the write lock.
    """
    with repo.read() as v:
        turn = v.open_turn(session)
        if turn is None:
            return None
        if implicit_only and not turn.implicit:
            raise RunActive(f"turn {turn.id} of session {session!r} is still open",
                            turn=turn.id, session=session)
        awaiting = _awaiting(v, turn)
    prepared: dict[str, _Prepared] = {}
    for change in awaiting:
        try:
            prepared.update(prepare(repo, [change.path], {change.path: _key(change.before)}))
        except SnapstoreError:
            continue  # the path became unreadable; the change keeps an unknown ``after``

    def commit(tx: Tx) -> Turn:
        current = tx.turn(turn.id)
        for change in _awaiting(tx, current):
            if change.path in prepared:
                current = _record_after(tx, current, change, prepared[change.path])
        return close_turn(tx, current)

    return repo.write(commit, locked=True)


def end_turn(repo: Repo, session: str) -> Turn:
    """Close the session's open turn."""
    with repo.write_lock():
        turn = finish_open_turn(repo, session)
    if turn is None:
        raise NotFound(f"session {session!r} has no open turn", session=session)
    return turn


def pre_write(repo: Repo, paths: Iterable[str | os.PathLike[str]], tool: str, session: str,
              source: str = "hook") -> CaptureResult:
    """Capture the current bytes of each path and open a change for it.

    Opens an implicit turn when none is open. A path that already has an open
    change in this turn is already protected and is left as it is.
    """
    rels = resolve_paths(repo, paths)
    prepared = prepare(repo, rels)

    def commit(tx: Tx) -> CaptureResult:
        turn = tx.open_turn(session) or _start_turn(tx, session, "", None, True)
        open_changes = dict(turn.open_changes or {})
        seq = turn.next_change
        now = tx.clock()
        for rel in rels:
            if rel in open_changes:
                continue  # already protected: its change still waits for ``after``
            item = prepared[rel]
            if item.key is not None:
                tx.put_blob(item.key, item.value, item.data)
            tx.put_change(Change(turn.id, seq, rel, item.version, tool=tool, source=source,
                                 time=now, mkdirs=item.mkdirs))
            open_changes[rel] = seq
            seq += 1
            tx.set_path_digest(rel, item.version)
        tx.put_turn(turn._replace(next_change=seq, open_changes=open_changes))
        tx.event("pre_write", session=session, turn=turn.id, paths=rels, tool=tool)
        faults.point("capture.commit")
        return CaptureResult(session, turn.id, rels, [])

    return repo.write(commit)


def post_write(repo: Repo, paths: Iterable[str | os.PathLike[str]],
               session: str) -> CaptureResult:
    """Record what was written to each path whose change is open in this turn."""
    rels = resolve_paths(repo, paths)
    with repo.read() as v:
        turn = v.open_turn(session)
        if turn is None:
            return CaptureResult(session, None, [], [(rel, "no open turn") for rel in rels])
        awaiting = {c.path: c for c in _awaiting(v, turn) if c.path in rels}
    prepared = prepare(repo, list(awaiting), {rel: _key(c.before) for rel, c in awaiting.items()})

    def commit(tx: Tx) -> CaptureResult:
        recorded, skipped = [], []
        current = tx.open_turn(session)
        if current is not None and current.id != turn.id:
            current = None
        for rel in rels:
            seq = (current.open_changes or {}).get(rel) if current is not None else None
            if current is None or seq is None or rel not in prepared:
                skipped.append((rel, "no pre-write was captured for it in this turn"))
                continue
            change = tx.change(current.id, seq)
            current = _record_after(tx, current, change, prepared[rel])
            recorded.append(rel)
        if current is not None:
            tx.put_turn(current)
        tx.event("post_write", session=session, turn=turn.id, paths=recorded)
        faults.point("capture.commit")
        return CaptureResult(session, turn.id, recorded, skipped)

    return repo.write(commit)


def _awaiting(v: View, turn: Turn) -> list[Change]:
    """The turn's changes still awaiting their ``after`` (``Turn.open_changes``)."""
    return [v.change(turn.id, seq) for seq in (turn.open_changes or {}).values()]


def _record_after(tx: Tx, turn: Turn, change: Change, item: _Prepared) -> Turn:
    """Record ``after`` for one open change; returns the turn without it open."""
    if item.key is not None:
        tx.put_blob(item.key, item.value, item.data)
    change = change._replace(after=item.version, done=True)
    tx.set_path_digest(change.path, item.version)
    if same(change.before, change.after) and (
            change.before is None or change.before.mode == change.after.mode):
        tx.delete_change(change)  # the write changed nothing
    else:
        tx.put_change(change)
    open_changes = dict(turn.open_changes or {})
    open_changes.pop(change.path, None)
    return turn._replace(open_changes=open_changes)


def _key(version: Version | None) -> bytes | None:
    return None if version is None else version.key
