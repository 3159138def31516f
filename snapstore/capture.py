"""The capture protocol: begin a turn, capture before a write, record after, end.

Work that touches the disk or compresses (reading the files, hashing, encoding
blobs) happens before the write transaction, so parallel tool calls from
several processes hold the store's writer lock only for the commit. Each call
is one durable LMDB commit.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from . import faults
from .errors import NotFound, RunActive, SnapstoreError
from .records import Change, Session, Turn, Version, same

if TYPE_CHECKING:
    import lmdb

    from .store import Store

F = TypeVar("F", bound=Callable[..., Any])


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


def resolve_paths(store: Store, paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Validate every path before anything is read or written; duplicates collapse."""
    rels: dict[str, None] = {}
    for path in paths:
        rels[store.ws.relpath(path)] = None
    return list(rels)


def prepare(store: Store, rels: Iterable[str], bases: dict[str, bytes | None] | None = None
            ) -> dict[str, _Prepared]:
    """Read each path and encode its bytes as a blob, ready to commit.

    The delta base is the path's latest recorded version unless ``bases`` says
    otherwise.
    """
    entries = {rel: store.ws.read(rel) for rel in rels}
    prepared = {}
    with store.db.read() as txn:
        for rel, entry in entries.items():
            if entry is None:
                prepared[rel] = _Prepared(rel, None, mkdirs=store.ws.missing_parents(rel))
                continue
            base = bases[rel] if bases and rel in bases else store.path_digest(txn, rel)
            key, value = store.encode_blob(txn, entry.data, base)
            prepared[rel] = _Prepared(rel, Version(key.hex(), entry.mode, entry.kind), key, value,
                                      data=entry.data)
    return prepared


def _start_turn(store: Store, txn: lmdb.Transaction, session: str, prompt: str,
                message_id: str | None, implicit: bool) -> Turn:
    record = store.get_session(txn, session) or Session(session, store.clock())
    turn = store.new_turn(txn, session, parent=store.get_head(txn, session), prompt=prompt,
                          message_id=message_id, implicit=implicit)
    store.put_turn(txn, turn)
    store.put_session(txn, record._replace(open_turn=turn.id, turns=record.turns + 1))
    store.set_head(txn, session, turn.id)
    store.event(txn, "turn_begin", session=session, turn=turn.id, implicit=implicit)
    return turn


def begin_turn(store: Store, session: str, prompt: str = "",
               message_id: str | None = None, scan: bool = False) -> Turn:
    """Open a turn as a child of the head; an implicit turn still open is closed first.

    With ``scan``, what changed since the last scan is recorded first, outside the turn.
    """
    if scan:
        store.scan(session)
    with store.db.write_lock():
        finish_open_turn(store, session, implicit_only=True)
        return store.db.write(
            lambda txn: _start_turn(store, txn, session, prompt, message_id, False), locked=True)


def finish_open_turn(store: Store, session: str, implicit_only: bool = False) -> Turn | None:
    """Record the missing ``after`` of every change and close the open turn.

    With ``implicit_only``, an explicitly begun turn is refused with ``run_active``.
    The caller holds the write lock.
    """
    with store.db.read() as txn:
        turn = store.open_turn(txn, session)
        if turn is None:
            return None
        if implicit_only and not turn.implicit:
            raise RunActive(f"turn {turn.id} of session {session!r} is still open",
                            hint="end it with `snapstore end`")
        pending = _pending_changes(store, txn, turn)
    prepared: dict[str, _Prepared] = {}
    for change in pending:
        try:
            bases = {change.path: _key(change.before)}
            prepared.update(prepare(store, [change.path], bases))
        except SnapstoreError:
            continue  # the path became unreadable; the change keeps an unknown ``after``

    def commit(txn: lmdb.Transaction) -> Turn:
        current = store.get_turn(txn, turn.id)
        for change in _pending_changes(store, txn, current):
            if change.path in prepared:
                current = _record_after(store, txn, current, change, prepared[change.path])
        return store.close_turn(txn, current)

    return store.db.write(commit, locked=True)


def end_turn(store: Store, session: str, scan: bool = False) -> Turn:
    """Close the session's open turn; with ``scan``, record what changed in it first."""
    if scan:
        with store.db.read() as txn:
            if store.open_turn(txn, session) is None:
                raise NotFound(f"session {session!r} has no open turn")
        store.scan(session)
    with store.db.write_lock():
        turn = finish_open_turn(store, session)
    if turn is None:
        raise NotFound(f"session {session!r} has no open turn")
    return turn


def pre_write(store: Store, paths: Iterable[str | os.PathLike[str]], tool: str = "",
              session: str = "default", source: str = "hook") -> CaptureResult:
    """Capture the current bytes of each path and open a change for it.

    Opens an implicit turn when none is open. A path that already has an open
    change in this turn is already protected and is left as it is.
    """
    rels = resolve_paths(store, paths)
    prepared = prepare(store, rels)

    def commit(txn: lmdb.Transaction) -> CaptureResult:
        turn = store.open_turn(txn, session) or _start_turn(store, txn, session, "", None, True)
        pending = dict(turn.pending or {})
        seq = turn.next_change
        now = store.clock()
        for rel in rels:
            if rel in pending:
                continue  # already protected: its change still waits for ``after``
            item = prepared[rel]
            if item.key is not None:
                store.put_blob(txn, item.key, item.value, item.data)
            store.put_change(txn, Change(turn.id, seq, rel, item.version, tool=tool,
                                         source=source, time=now, mkdirs=item.mkdirs))
            pending[rel] = seq
            seq += 1
            store.set_path_digest(txn, rel, item.version)
        store.put_turn(txn, turn._replace(next_change=seq, pending=pending))
        store.event(txn, "pre_write", session=session, turn=turn.id, paths=rels, tool=tool)
        faults.point("capture.commit")
        return CaptureResult(session, turn.id, rels, [])

    return store.db.write(commit)


def post_write(store: Store, paths: Iterable[str | os.PathLike[str]],
               session: str = "default") -> CaptureResult:
    """Record what was written to each path whose change is open in this turn."""
    rels = resolve_paths(store, paths)
    with store.db.read() as txn:
        turn = store.open_turn(txn, session)
        if turn is None:
            return CaptureResult(session, None, [], [(rel, "no open turn") for rel in rels])
        pending = {c.path: c for c in _pending_changes(store, txn, turn) if c.path in rels}
    prepared = prepare(store, list(pending), {rel: _key(c.before) for rel, c in pending.items()})

    def commit(txn: lmdb.Transaction) -> CaptureResult:
        recorded, skipped = [], []
        current = store.open_turn(txn, session)
        if current is not None and current.id != turn.id:
            current = None
        for rel in rels:
            seq = (current.pending or {}).get(rel) if current is not None else None
            if current is None or seq is None or rel not in prepared:
                skipped.append((rel, "no pre-write was captured for it in this turn"))
                continue
            change = store.get_change(txn, current.id, seq)
            current = _record_after(store, txn, current, change, prepared[rel])
            recorded.append(rel)
        if current is not None:
            store.put_turn(txn, current)
        store.event(txn, "post_write", session=session, turn=turn.id, paths=recorded)
        faults.point("capture.commit")
        return CaptureResult(session, turn.id, recorded, skipped)

    return store.db.write(commit)


def _pending_changes(store: Store, txn: lmdb.Transaction, turn: Turn) -> list[Change]:
    """The turn's changes still waiting for their ``after``, found through ``Turn.pending``."""
    return [store.get_change(txn, turn.id, seq) for seq in (turn.pending or {}).values()]


def _record_after(store: Store, txn: lmdb.Transaction, turn: Turn, change: Change,
                  item: _Prepared) -> Turn:
    """Record ``after`` for one pending change; returns the turn without it pending."""
    if item.key is not None:
        store.put_blob(txn, item.key, item.value, item.data)
    change = change._replace(after=item.version, done=True)
    store.set_path_digest(txn, change.path, item.version)
    if same(change.before, change.after) and (
            change.before is None or change.before.mode == change.after.mode):
        store.delete_change(txn, change)  # the write changed nothing
    else:
        store.put_change(txn, change)
    pending = dict(turn.pending or {})
    pending.pop(change.path, None)
    return turn._replace(pending=pending)


def _key(version: Version | None) -> bytes | None:
    return None if version is None else bytes.fromhex(version.digest)


@contextmanager
def writing(store: Store, paths: Iterable[str | os.PathLike[str]], tool: str = "",
            session: str = "default") -> Iterator[CaptureResult]:
    """Capture ``paths`` before the block and record them after it, even if it raises."""
    paths = list(paths)
    result = pre_write(store, paths, tool, session)
    try:
        yield result
    finally:
        post_write(store, paths, session)


def tracked(store: Store, paths: str | Callable[..., Iterable[str | os.PathLike[str]]], *,
            tool: str | None = None, session: str = "default") -> Callable[[F], F]:
    """Decorate an agent's tool function so every call is captured.

    ``paths`` names the parameter that holds the path (or a list of paths), or
    is a function given the call's arguments that returns the paths.
    """
    import inspect

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)
        name = tool or fn.__name__

        def targets(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
            if callable(paths):
                return list(paths(*args, **kwargs))
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            value = bound.arguments[paths]
            return [value] if isinstance(value, (str, os.PathLike)) else list(value)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with writing(store, targets(args, kwargs), name, session):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
