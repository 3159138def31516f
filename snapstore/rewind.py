"""Rewind and undo: choose what to take back, plan it, and hand it to the journal.

``rewind`` takes back a turn and every later turn on the session's branch;
``undo`` takes back a rewind (or an undo). Both plan with the per-path fold of
``snapstore.plan`` and are made durable and applied by ``snapstore.journal``.
"""

from __future__ import annotations

from collections.abc import Iterable

from .capture import finish_open_turn
from .errors import BadInput, NotFound, NotOnBranch, RunActive, Unfinished
from .history import branch, last_undoable, resolve_turn
from .journal import Operation, execute
from .plan import MODES, POLICIES, RewindResult, group_by_path, plan_path
from .records import AGENT, REWIND, RewindOp, Turn
from .repo import Repo, View


def check_choices(mode: str, on_conflict: str) -> None:
    if mode not in MODES:
        raise BadInput(f"unknown mode {mode!r} (choose from {', '.join(MODES)})")
    if on_conflict not in POLICIES:
        raise BadInput(f"unknown conflict policy {on_conflict!r} "
                       f"(choose from {', '.join(POLICIES)})")


def refuse_unfinished(repo: Repo) -> None:
    """Refuse to start an operation while an interrupted one is not finished."""
    unfinished = repo.unfinished()
    if unfinished:
        raise Unfinished(f"rewind {unfinished[0]} was interrupted and is not finished",
                         operation=unfinished[0])


def rewind(repo: Repo, target: str | int, session: str, *, mode: str = "both",
           on_conflict: str = "skip", paths: Iterable[str] | None = None,
           dry_run: bool = False, force: bool = False) -> RewindResult:
    """Take back ``target`` and every later turn on the session's current branch."""
    check_choices(mode, on_conflict)
    rels = None if paths is None else [repo.ws.relpath(p) for p in paths]
    if rels is not None:
        mode = "code"  # taking back some files never moves the conversation
    with repo.write_lock():
        refuse_unfinished(repo)
        with repo.read() as v:
            turn = resolve_turn(v, target, session)
            open_turn = v.open_turn(session)
        if open_turn is not None:
            if not force:
                raise RunActive(f"turn {open_turn.id} of session {session!r} is still open",
                                turn=open_turn.id, session=session)
            if not dry_run:
                finish_open_turn(repo, session)
        with repo.read() as v:
            operation = _plan_rewind(repo, v, turn, session, mode, on_conflict, rels)
        if dry_run:
            operation.result.dry_run = True
            return operation.result
        return execute(repo, operation)


def _plan_rewind(repo: Repo, v: View, turn: Turn, session: str, mode: str, on_conflict: str,
                 rels: list[str] | None) -> Operation:
    on_branch = branch(v, session)
    ids = [t.id for t in on_branch]
    if turn.kind != AGENT or turn.id not in ids:
        raise NotOnBranch(f"turn {turn.id} is not on the current branch of session "
                          f"{session!r} (it is {turn.state})", turn=turn.id, session=session,
                          state=turn.state)
    reverted = on_branch[: ids.index(turn.id) + 1]
    changes = [c for t in reversed(reverted) for c in v.changes(t.id)]
    if rels is not None:
        untouched = sorted(set(rels) - {c.path for c in changes})
        if untouched:
            raise BadInput(f"turn {turn.id} and the turns after it never changed "
                           f"{', '.join(untouched)}", turn=turn.id, path=untouched[0])
        changes = [c for c in changes if c.path in rels]
    head = ids[0] if ids else None
    new_head = head if mode == "code" else turn.parent
    record = v.require_session(session)
    op = RewindOp(session, turn.id, mode, prev_head=head, new_head=new_head,
                  reverted=[t.id for t in reverted], paths=rels or [],
                  prev_rewind=record.last_rewind)
    result = RewindResult(session, turn.id, turn.prompt, op.reverted, new_head=new_head)
    plans = [] if mode == "conversation" else [
        plan_path(repo.ws, v, path, path_changes, on_conflict)
        for path, path_changes in sorted(group_by_path(changes).items())]
    return Operation(op, result, plans)


def _find_rewind(v: View, rewind_id: str | None, session: str) -> Turn:
    if rewind_id is not None:
        turn = resolve_turn(v, rewind_id, session)
        if turn.kind != REWIND or turn.op is None or turn.op.undoes is not None:
            raise BadInput(f"{turn.id} is not a rewind", turn=turn.id)
        if turn.op.undone_by is not None:
            raise BadInput(f"rewind {turn.id} was already undone by {turn.op.undone_by}",
                           turn=turn.id)
        return turn
    v.require_session(session)
    turn = last_undoable(v, session)
    if turn is None:
        raise NotFound(f"session {session!r} has no rewind to undo", session=session)
    return turn


def undo(repo: Repo, rewind_id: str | None, session: str, *, on_conflict: str = "skip",
         dry_run: bool = False) -> RewindResult:
    """Take back a rewind: the files it wrote, and the head it moved."""
    check_choices("both", on_conflict)
    with repo.write_lock():
        refuse_unfinished(repo)
        with repo.read() as v:
            record = _find_rewind(v, rewind_id, session)
            assert record.op is not None
            open_turn = v.open_turn(session)
            if open_turn is not None:
                raise RunActive(f"turn {open_turn.id} of session {session!r} is still open",
                                turn=open_turn.id, session=session)
            done = record.op
            moves_head = done.mode != "code"
            head = v.head(session)
            op = RewindOp(session, record.id, done.mode, prev_head=head,
                          new_head=done.prev_head if moves_head else head,
                          reverted=done.reverted, undoes=record.id,
                          prev_rewind=v.require_session(session).last_rewind)
            result = RewindResult(session, record.id, "", done.reverted, new_head=op.new_head)
            plans = [plan_path(repo.ws, v, path, changes, on_conflict)
                     for path, changes in sorted(group_by_path(v.changes(record.id)).items())]
        operation = Operation(op, result, plans)
        if dry_run:
            operation.result.dry_run = True
            return operation.result
        return execute(repo, operation)
