"""Applying rewinds and undos as journaled operations.

A rewind (or an undo) becomes durable in three steps, each described in
docs/format.md:

1. **Journal.** One commit records an operation turn (kind ``rewind``) whose
   changes hold, per path, the bytes on disk now (``before``) and the planned
   result (``after``), and lists the operation under ``meta/pending``.
2. **Apply.** Each path is written once, atomically; emptied folders go.
3. **Finish.** One commit marks the operation applied, moves the head, marks
   the reverted turns and clears ``pending``.

A crash between 1 and 3 leaves a pending operation that :func:`resume`
finishes: a path still holding ``before`` gets ``after``, a path holding
``after`` is done, anything else is left alone and reported. Because the
journal is written first, ``undo`` always has the bytes to go back to.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import faults
from .capture import finish_open_turn
from .errors import BadInput, NotFound, RunActive, SnapstoreError, StoreCorrupt
from .history import branch, resolve_turn
from .records import AGENT, CLOSED, REWIND, REWOUND, Change, RewindOp, Turn, fingerprint
from .rewind import (
    CONFLICT,
    DELETE,
    KEEP,
    MERGE,
    MODES,
    POLICIES,
    RESTORE,
    PathPlan,
    RewindResult,
    group_by_path,
    plan_path,
    version_of,
)

if TYPE_CHECKING:
    import lmdb

    from .store import Store

#: Threads writing a rewind's files at once.
WRITERS = 8


@dataclass
class _Operation:
    """A planned rewind or undo, before it is journaled."""

    op: RewindOp
    result: RewindResult
    plans: list[PathPlan] = field(default_factory=list)


def _check_choices(mode: str, on_conflict: str) -> None:
    if mode not in MODES:
        raise BadInput(f"unknown mode {mode!r} (choose from {', '.join(MODES)})")
    if on_conflict not in POLICIES:
        raise BadInput(f"unknown conflict policy {on_conflict!r} "
                       f"(choose from {', '.join(POLICIES)})")


def _refuse_pending(store: Store) -> None:
    pending = store.pending_operations()
    if pending:
        raise RunActive(f"rewind {pending[0]} was interrupted and is not finished",
                        hint="run `snapstore rewind --resume`")


def rewind(store: Store, target: str | int, session: str, *, mode: str = "both",
           on_conflict: str = "skip", paths: Iterable[str] | None = None,
           dry_run: bool = False, force: bool = False) -> RewindResult:
    """Take back ``target`` and every later turn on the session's current branch."""
    _check_choices(mode, on_conflict)
    rels = None if paths is None else [store.ws.relpath(p) for p in paths]
    if rels is not None:
        mode = "code"  # taking back some files never moves the conversation
    with store.db.write_lock():
        _refuse_pending(store)
        turn = resolve_turn(store, target, session)
        with store.db.read() as txn:
            open_turn = store.open_turn(txn, session)
        if open_turn is not None:
            if not force:
                raise RunActive(f"turn {open_turn.id} of session {session!r} is still open",
                                hint="end it with `snapstore end`, or pass --force")
            if not dry_run:
                finish_open_turn(store, session)
        operation = _plan_rewind(store, turn, session, mode, on_conflict, rels)
        if dry_run:
            operation.result.dry_run = True
            return operation.result
        return _execute(store, operation)


def _plan_rewind(store: Store, turn: Turn, session: str, mode: str, on_conflict: str,
                 rels: list[str] | None) -> _Operation:
    with store.db.read() as txn:
        on_branch = branch(store, txn, session)
        ids = [t.id for t in on_branch]
        if turn.kind != AGENT or turn.id not in ids:
            raise BadInput(f"turn {turn.id} is not on the current branch of session "
                           f"{session!r} (it is {turn.state})", hint="see `snapstore log`")
        reverted = on_branch[: ids.index(turn.id) + 1]
        changes = [c for t in reversed(reverted) for c in store.changes(txn, t.id)]
        if rels is not None:
            changes = [c for c in changes if c.path in rels]
        head = ids[0] if ids else None
        new_head = head if mode == "code" else turn.parent
        record = store.require_session(txn, session)
        op = RewindOp(session, turn.id, mode, prev_head=head, new_head=new_head,
                      reverted=[t.id for t in reverted], paths=rels or [],
                      prev_rewind=record.last_rewind)
        result = RewindResult(session, turn.id, turn.prompt, op.reverted, new_head=new_head)
        plans = [] if mode == "conversation" else [
            plan_path(store, txn, path, path_changes, on_conflict)
            for path, path_changes in sorted(group_by_path(changes).items())]
    for plan in plans:
        result.add(plan)
    result.plans = plans
    return _Operation(op, result, plans)


def _find_rewind(store: Store, txn: lmdb.Transaction, rewind_id: str | None,
                 session: str) -> Turn:
    if rewind_id is not None:
        turn = resolve_turn(store, rewind_id, session)
        if turn.kind != REWIND or turn.op is None or turn.op.undoes is not None:
            raise BadInput(f"{turn.id} is not a rewind")
        if turn.op.undone_by is not None:
            raise BadInput(f"rewind {turn.id} was already undone by {turn.op.undone_by}")
        return turn
    store.require_session(txn, session)
    turn = last_undoable(store, txn, session)
    if turn is None:
        raise NotFound(f"session {session!r} has no rewind to undo")
    return turn


def last_undoable(store: Store, txn: lmdb.Transaction, session: str) -> Turn | None:
    """The rewind a plain ``undo`` takes back: the newest applied one not yet undone."""
    record = store.get_session(txn, session)
    op_id = record.last_rewind if record else None
    while op_id is not None:
        turn = store.get_turn(txn, op_id)
        assert turn.op is not None
        if turn.op.undoes is None and turn.op.undone_by is None and turn.op.status == "applied":
            return turn
        op_id = turn.op.prev_rewind
    return None


def undo(store: Store, rewind_id: str | None, session: str, *, on_conflict: str = "skip",
         dry_run: bool = False) -> RewindResult:
    """Take back a rewind: the files it wrote, and the head it moved."""
    _check_choices("both", on_conflict)
    with store.db.write_lock():
        _refuse_pending(store)
        with store.db.read() as txn:
            record = _find_rewind(store, txn, rewind_id, session)
            assert record.op is not None
            if store.open_turn(txn, session) is not None:
                raise RunActive(f"session {session!r} has an open turn",
                                hint="end it with `snapstore end` first")
            done = record.op
            moves_head = done.mode != "code"
            head = store.get_head(txn, session)
            op = RewindOp(session, record.id, done.mode, prev_head=head,
                          new_head=done.prev_head if moves_head else head,
                          reverted=done.reverted, undoes=record.id,
                          prev_rewind=store.require_session(txn, session).last_rewind)
            result = RewindResult(session, record.id, "", done.reverted, new_head=op.new_head)
            plans = [plan_path(store, txn, path, changes, on_conflict)
                     for path, changes in sorted(group_by_path(store.changes(txn, record.id))
                                                 .items())]
        for plan in plans:
            result.add(plan)
        result.plans = plans
        if dry_run:
            result.dry_run = True
            return result
        return _execute(store, _Operation(op, result, plans))


def _execute(store: Store, operation: _Operation) -> RewindResult:
    """Journal, apply and finish one planned operation. The caller holds the write lock."""
    op_id = _journal(store, operation)
    faults.point("journal.journaled")
    operation.result.undo_id = op_id
    errors = _apply(store, operation.plans)
    return _finish(store, op_id, errors)


def _journal(store: Store, operation: _Operation) -> str:
    writes = [p for p in operation.plans if p.writes]
    encoded = {}
    with store.db.read() as txn:
        for plan in writes:
            for entry in (plan.current_entry, plan.content):
                if entry is not None:
                    base = store.path_digest(txn, plan.path)
                    key, value = store.encode_blob(txn, entry.data, base)
                    encoded[key] = value
    summary = operation.result.to_json()
    # Every path that ends absent with folders to remove, written or already gone.
    summary["rmdirs"] = {p.path: p.rmdirs for p in operation.plans if p.rmdirs}

    def commit(txn: lmdb.Transaction) -> str:
        op = operation.op._replace(result=summary)
        turn = store.new_turn(txn, op.session, kind=REWIND, state=CLOSED, op=op,
                              prompt=("undo " if op.undoes else "rewind to ") + str(op.target))
        for key, value in encoded.items():
            store.put_blob(txn, key, value)
        for seq, plan in enumerate(writes):
            store.put_change(txn, Change(turn.id, seq, plan.path, plan.current, plan.result,
                                         True, "snapstore", "rewind", store.clock(), plan.mkdirs))
        store.put_turn(txn, turn._replace(closed=turn.created, next_change=len(writes)))
        record = store.require_session(txn, op.session)
        store.put_session(txn, record._replace(last_rewind=turn.id))
        store.set_pending(txn, turn.id, True)
        store.event(txn, "undo_begin" if op.undoes else "rewind_begin", session=op.session,
                    turn=turn.id, target=op.target, paths=[p.path for p in writes])
        return turn.id

    return store.db.write(commit, locked=True)


def _apply(store: Store, plans: list[PathPlan]) -> list[dict[str, str]]:
    """Write each planned path once; a path that changed since planning is left alone.

    Every file is synced before its rename; the folders are synced once each
    after all the writes, before the caller's finish commit. Folders emptied by
    deletions go last, once every file in them has been handled.
    """
    errors = []
    emptied = [p for p in plans if p.action == KEEP and p.result is None and p.rmdirs]
    writes = [p for p in plans if p.writes]

    def write(plan: PathPlan) -> str | None:
        """Write one path; the reason it was left alone, or None."""
        try:
            if not _unchanged(store, plan):
                raise SnapstoreError(f"{plan.path} changed while the rewind ran; left alone")
            store.ws.write(plan.path, plan.content, sync_folder=False)
        except (SnapstoreError, OSError) as exc:
            return str(exc)
        faults.point("journal.wrote_path")
        return None

    # Paths are independent, and most of a write is waiting for the disk.
    with ThreadPoolExecutor(min(WRITERS, len(writes) or 1)) as pool:
        failures = list(pool.map(write, writes))
    for plan, failure in zip(writes, failures, strict=True):
        if failure is not None:
            errors.append({"path": plan.path, "reason": failure})
        elif plan.content is None and plan.rmdirs:
            emptied.append(plan)
    store.ws.sync_folders(p.path for p, f in zip(writes, failures, strict=True) if f is None)
    for plan in sorted(emptied, key=lambda p: -p.path.count("/")):
        # A folder that cannot go is only clutter, never lost work.
        with contextlib.suppress(SnapstoreError, OSError):
            store.ws.remove_empty_parents(plan.path, plan.rmdirs)
    return errors


def _unchanged(store: Store, plan: PathPlan) -> bool:
    """Whether the path still holds what the plan was made from.

    The stat fingerprint read at planning time settles it cheaply; only when
    that moved is the file read and hashed again.
    """
    now = store.ws.lstat(plan.path)
    then = plan.current_entry.stat if plan.current_entry is not None else None
    if now is None or then is None:
        if now is None and plan.current is None:
            return True
    elif fingerprint(now) == fingerprint(then):
        return True
    return version_of(store.ws.read(plan.path)) == plan.current


def _finish(store: Store, op_id: str, errors: list[dict[str, str]]) -> RewindResult:
    faults.point("journal.before_finish")

    def commit(txn: lmdb.Transaction) -> RewindResult:
        turn = store.get_turn(txn, op_id)
        op = turn.op
        assert op is not None and op.result is not None
        failed = {e["path"] for e in errors}
        summary = dict(op.result)
        summary.pop("rmdirs", None)
        result = RewindResult(**summary)
        result.undo_id = op_id
        for key in ("restored", "deleted", "merged"):
            setattr(result, key, [p for p in getattr(result, key) if p not in failed])
        result.errors = result.errors + errors
        for change in store.changes(txn, op_id):
            if change.path not in failed:
                store.set_path_digest(txn, change.path, change.after)
        if op.undoes is not None:
            _finish_undo(store, txn, op, op_id)
        elif op.mode != "code":
            store.set_head(txn, op.session, op.new_head)
            for turn_id in op.reverted:
                store.put_turn(txn, store.get_turn(txn, turn_id)._replace(state=REWOUND))
        store.put_turn(txn, turn._replace(op=op._replace(status="applied",
                                                         result=result.to_json())))
        store.set_pending(txn, op_id, False)
        store.event(txn, "undo" if op.undoes else "rewind", session=op.session, turn=op_id,
                    target=op.target, new_head=op.new_head, errors=len(result.errors),
                    conflicts=len(result.conflicts))
        return result

    return store.db.write(commit, locked=True)


def _finish_undo(store: Store, txn: lmdb.Transaction, op: RewindOp, op_id: str) -> None:
    assert op.undoes is not None
    undone = store.get_turn(txn, op.undoes)
    assert undone.op is not None
    if undone.op.mode != "code":
        store.set_head(txn, op.session, op.new_head)
        for turn_id in undone.op.reverted:
            reverted = store.get_turn(txn, turn_id)
            if reverted.state == REWOUND:
                store.put_turn(txn, reverted._replace(state=CLOSED))
    store.put_turn(txn, undone._replace(op=undone.op._replace(undone_by=op_id)))


def resume(store: Store) -> list[RewindResult]:
    """Finish every interrupted operation, rolling each path forward to its plan."""
    results = []
    with store.db.write_lock():
        for op_id in store.pending_operations():
            with store.db.read() as txn:
                turn = store.get_turn(txn, op_id)
                if turn.op is None:
                    raise StoreCorrupt(f"pending operation {op_id} has no record")
                changes = store.changes(txn, op_id)
                rmdirs = dict((turn.op.result or {}).get("rmdirs", {}))
                plans = []
                for change in changes:
                    plans.append(_resume_plan(store, txn, change, rmdirs.pop(change.path, 0)))
                plans += [PathPlan(path, KEEP, rmdirs=n) for path, n in rmdirs.items()]
            errors = [{"path": p.path, "reason": p.reason} for p in plans if p.action == CONFLICT]
            errors += _apply(store, [p for p in plans if p.action != CONFLICT])
            results.append(_finish(store, op_id, errors))
    return results


def _resume_plan(store: Store, txn: lmdb.Transaction, change: Change, rmdirs: int) -> PathPlan:
    try:
        store.ws.remove_temp_files(change.path)  # a write the crash cut short
        entry = store.ws.read(change.path)
    except (SnapstoreError, OSError) as exc:
        return PathPlan(change.path, CONFLICT, reason=str(exc))
    current = version_of(entry)
    if current == change.after:
        return PathPlan(change.path, KEEP, current, entry, current, entry, rmdirs=rmdirs)
    if current != change.before:
        return PathPlan(change.path, CONFLICT, current, entry,
                        reason="changed since the interrupted rewind; left alone")
    try:
        content = store.version_bytes(txn, change.after)
    except SnapstoreError as exc:
        return PathPlan(change.path, CONFLICT, current, entry, reason=str(exc))
    action = DELETE if change.after is None else RESTORE if change.before else MERGE
    return PathPlan(change.path, action, current, entry, change.after, content, rmdirs=rmdirs)
